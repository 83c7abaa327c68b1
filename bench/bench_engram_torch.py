#!/usr/bin/env python3
# PyTorch versions of the Engram layer at real V4.1 dims (bf16 shortcut, same math), the FP8 ceiling, the table.
import sys

import numpy as np
import torch

K, N, D, HC = 6144, 25600, 5120, 4
dev = "cuda"


def median_s(fn, reps=30, warm=3, calls=1):
    # Seconds a call: median over reps trials of the mean of `calls` back-to-back calls (as bench_engram times).
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e-3 / calls)
    times.sort()
    return times[len(times) // 2]


class Turns:
    # The weight copies in turn, so back-to-back calls never find the last call's weights in L2 (as bench_engram).
    def __init__(self, items):
        self.items, self.i = items, 0

    def next(self):
        self.i += 1
        return self.items[self.i % len(self.items)]


def act_quant_codes(x):
    # act_quant(x, 32, ue8m0) as the engine stores it: e4m3 codes [T, K] and power-of-two scales [T, K / 32].
    xb = x.float().view(x.shape[0], -1, 32)
    amax = xb.abs().amax(-1, keepdim=True).clamp(min=1e-4)
    s = torch.exp2(torch.ceil(torch.log2(amax / 448.0)))
    return (xb / s).clamp(-448, 448).to(torch.float8_e4m3fn).view(x.shape), s.squeeze(-1)


def act_quant(x):
    # act_quant as fake quantisation: the codes times their scales, in bf16 (exact).
    q, s = act_quant_codes(x)
    return (q.float().view(x.shape[0], -1, 32) * s.unsqueeze(-1)).to(torch.bfloat16).view(x.shape)


def e8m0(b):
    # e8m0 scale bytes 1-254 as fp32 powers of two, 2^(b - 127); 0 and 255 (2^-127, NaN) are refused, not decoded.
    if ((b == 0) | (b == 255)).any():
        raise ValueError("e8m0 scale byte 0 or 255 in the dump; this check decodes only 1-254")
    return torch.exp2(b.float() - 127.0)


def wkv_same(x8, sa, w8, sw_t):
    # The spec's wkv on x8 [T, K], w8 [N, K] (e4m3), sa [T, K/32], sw_t [K/32, N]: 32-block sums promoted in K order.
    T, pad = x8.shape[0], -x8.shape[0] % 16
    if pad:  # M to a multiple of 16 (one aligned path for every size); zero rows change no other row
        x8 = torch.cat([x8, torch.zeros(pad, x8.shape[1], dtype=x8.dtype, device=x8.device)])
        sa = torch.cat([sa, torch.ones(pad, sa.shape[1], device=sa.device)])
    one = torch.ones((), device=x8.device)
    acc = torch.zeros(x8.shape[0], w8.shape[0], device=x8.device)
    for kb in range(x8.shape[1] // 32):
        blk = slice(32 * kb, 32 * kb + 32)
        d = torch._scaled_mm(x8[:, blk], w8[:, blk].t(), scale_a=one, scale_b=one, out_dtype=torch.float32)
        # d·sa·sw is exact (powers of two), so the add rounds once, as the engine's fma(d, sa·sw, acc).
        acc.addcmul_(d.mul_(sa[:, kb : kb + 1]), sw_t[kb])
    return acc[:T].to(torch.bfloat16)


def gate_add(kv, qw, kw, h):
    key = kv[:, : HC * D].float().view(-1, HC, D)
    value = kv[:, HC * D :].float()
    hf = h.float()
    rstd = torch.rsqrt(hf.square().mean(-1) + 1e-20) * torch.rsqrt(key.square().mean(-1) + 1e-20)
    dot = ((hf * (qw.float() * kw.float())) * key).sum(-1) * rstd * D**-0.5
    gate = torch.sigmoid(torch.copysign(dot.abs().clamp(min=1e-6).sqrt(), dot))
    return (hf + gate.unsqueeze(-1) * value.unsqueeze(1)).to(torch.bfloat16)


def embed(e_rows, e_scale):
    return (e_rows.float().view(e_rows.shape[0], -1, 32) * e_scale.float().unsqueeze(-1)).to(torch.bfloat16)


def layer(e_rows, e_scale, w_bf16, qw, kw, h):
    # The bf16 peer: act_quant as fake quantisation, one bf16 GEMM on weights dequantised once (no 32-block promotion).
    e = embed(e_rows, e_scale)
    return gate_add(act_quant(e.view(e_rows.shape[0], K)) @ w_bf16.t(), qw, kw, h)


def layer_same(e_rows, e_scale, w8, sw_t, qw, kw, h):
    # The same math as the engine: e4m3 codes and scales, the promoted wkv, the gate.
    x8, sa = act_quant_codes(embed(e_rows, e_scale).view(e_rows.shape[0], K))
    return gate_add(wkv_same(x8, sa, w8, sw_t), qw, kw, h)


def check(dump):
    # The engine's wkv output (bench_engram T dump DIR) against wkv_same on the same codes, bit for bit.
    def load(name, dtype=np.uint8):
        return torch.from_numpy(np.fromfile(f"{dump}/{name}", dtype=dtype)).to(dev)

    x8 = load("x.e4m3").view(torch.float8_e4m3fn).view(-1, K)
    T = x8.shape[0]
    sa = e8m0(load("x_scale.e8m0")).view(T, K // 32)
    w8 = load("w.e4m3").view(torch.float8_e4m3fn).view(N, K)
    sw_t = e8m0(load("w_scale.e8m0")).view(N // 32, K // 32).repeat_interleave(32, 0).t().contiguous()
    y = load("y.bf16", np.int16).view(T, N)
    got = wkv_same(x8, sa, w8, sw_t).view(torch.int16)
    diff = (got != y).sum().item()
    ordered = [torch.where(v < 0, -(v.int() & 0x7FFF), v.int()) for v in (got, y)]  # bf16 bits in value order
    ulps = (ordered[0] - ordered[1]).abs().max().item()
    print(f"BENCH torch_same_t{T}_differing {diff}\nBENCH torch_same_t{T}_max_ulps {ulps}")
    return diff == 0


def ceiling_rounds(n=3):
    # The FP8 ceiling (TFLOP/s of torch._scaled_mm, 4096 x N x K): n rounds, each the median of 10 trials.
    a = (torch.randn(4096, K, device=dev)).to(torch.float8_e4m3fn)
    b = (torch.randn(N, K, device=dev)).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=dev)

    def mm():
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    return [2.0 * 4096 * N * K / median_s(mm, 10, 3, 4) / 1e12 for _ in range(n)]


def main():
    torch.manual_seed(0)
    res = {}
    w8 = (torch.randn(N, K, device=dev) * 0.5).to(torch.float8_e4m3fn)
    ws = torch.exp2(torch.randint(-13, -7, (N // 32, K // 32), device=dev).float())
    w_bf16 = (w8.float() * ws.repeat_interleave(32, 0).repeat_interleave(32, 1)).to(torch.bfloat16)
    ws_t = ws.repeat_interleave(32, 0).t().contiguous()
    wt = Turns([w_bf16] + [w_bf16.clone() for _ in range(2)])
    qw = torch.randn(HC, D, device=dev).to(torch.bfloat16)
    kw = torch.randn(HC, D, device=dev).to(torch.bfloat16)
    ceil = ceiling_rounds()
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    res["torch_copy_GBps"] = 2 * src.numel() / median_s(lambda: dst.copy_(src), 10, 2) / 1e9
    for T in (1, 8, 64, 4096):
        rows = (torch.randn(T, K, device=dev) * 2).to(torch.float8_e4m3fn)
        sc = torch.exp2(torch.randint(-17, 3, (T, K // 32), device=dev).float())
        h = torch.randn(T, HC, D, device=dev).to(torch.bfloat16)
        xq = act_quant(torch.randn(T, K, device=dev).to(torch.bfloat16))
        n = 20 if T <= 64 else 4
        res[f"torch_wkv_t{T}_us"] = median_s(lambda: xq @ wt.next().t(), calls=n) * 1e6
        res[f"torch_layer_t{T}_us"] = median_s(lambda: layer(rows, sc, wt.next(), qw, kw, h), calls=n) * 1e6
        x8, sa = act_quant_codes(torch.randn(T, K, device=dev).to(torch.bfloat16))
        r, w = (10, 2) if T <= 64 else (3, 1)
        res[f"torch_same_wkv_t{T}_us"] = median_s(lambda: wkv_same(x8, sa, w8, ws_t), r, w) * 1e6
        res[f"torch_same_layer_t{T}_us"] = median_s(lambda: layer_same(rows, sc, w8, ws_t, qw, kw, h), r, w) * 1e6
    ceil += ceiling_rounds()
    res["fp8_ceiling_TFLOPs"], res["fp8_ceiling_low_TFLOPs"] = max(ceil), min(ceil)
    res["fp8_ceiling_rounds"] = len(ceil)
    for k, v in res.items():
        print(f"BENCH {k} {v:.2f}")
    if len(sys.argv) > 1:
        table(sys.argv[1], res)


def table(path, res):
    c = {}
    for line in open(path):
        p = line.split()
        if len(p) == 3 and p[0] == "BENCH":
            c[p[1]] = p[2]
    copy = float(c["copy_GBps"])
    print(f"\ncopy {copy:.0f} GB/s (C), {res['torch_copy_GBps']:.0f} GB/s (torch); "
          f"FP8 ceiling {res['fp8_ceiling_TFLOPs']:.0f} TFLOP/s (torch._scaled_mm 4096x25600x6144, the highest of "
          f"{res['fp8_ceiling_rounds']} rounds, before and after the sizes; lowest {res['fp8_ceiling_low_TFLOPs']:.0f})")
    print("| T | wkv us | GB/s | of copy | TFLOP/s | of FP8 ceiling | wkv us alone | torch wkv us | layer us | "
          "torch layer us | torch/dsfold (layer) | torch/dsfold (wkv) | kernel | layer's wkv kernel | "
          "torch same-math wkv us | torch same-math layer us | "
          "same-math torch/dsfold (wkv, layer) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for T in (1, 8, 64, 4096):
        us = float(c[f"wkv_t{T}_us"])
        gbs = float(c[f"wkv_t{T}_GBps"])
        tf = float(c[f"wkv_t{T}_TFLOPs"])
        lus = float(c[f"layer_t{T}_us"])
        tl, tw = res[f"torch_layer_t{T}_us"], res[f"torch_wkv_t{T}_us"]
        sw, sl = res[f"torch_same_wkv_t{T}_us"], res[f"torch_same_layer_t{T}_us"]
        alone = float(c[f"wkv_t{T}_alone_us"])
        print(f"| {T} | {us:.1f} | {gbs:.0f} | {gbs / copy:.2f} | {tf:.1f} | {tf / res['fp8_ceiling_TFLOPs']:.2f} | "
              f"{alone:.1f} | {tw:.1f} | {lus:.1f} | {tl:.1f} | {tl / lus:.2f} | {tw / us:.2f} | "
              f"{c[f'wkv_t{T}_best']} | {c.get(f'layer_t{T}_wkv_geom', '?')} | {sw:.1f} | {sl:.1f} | "
              f"{sw / us:.1f}, {sl / lus:.1f} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        if len(sys.argv) < 3:
            sys.exit("bench_engram_torch.py: --check needs one or more directories from bench_engram T dump DIR")
        sys.exit(0 if all([check(d) for d in sys.argv[2:]]) else 1)
    main()
