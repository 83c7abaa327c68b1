#!/usr/bin/env python3
# PyTorch version of the Engram layer math at real V4.1 dims, the FP8 tensor-core ceiling, and the joined table.
import sys

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


def act_quant(x):
    # act_quant(x, 32, ue8m0) as fake quantisation: power-of-two scale from the exponent bits of amax/448.
    xb = x.float().view(x.shape[0], -1, 32)
    amax = xb.abs().amax(-1, keepdim=True).clamp(min=1e-4)
    s = torch.exp2(torch.ceil(torch.log2(amax / 448.0)))
    q = (xb / s).clamp(-448, 448).to(torch.float8_e4m3fn)
    return (q.float() * s).to(torch.bfloat16).view(x.shape)


def layer(e_rows, e_scale, w_bf16, qw, kw, h):
    e = (e_rows.float().view(e_rows.shape[0], -1, 32) * e_scale.float().unsqueeze(-1)).to(torch.bfloat16)
    kv = act_quant(e.view(e_rows.shape[0], K)) @ w_bf16.t()
    key = kv[:, : HC * D].float().view(-1, HC, D)
    value = kv[:, HC * D :].float()
    hf = h.float()
    rstd = torch.rsqrt(hf.square().mean(-1) + 1e-20) * torch.rsqrt(key.square().mean(-1) + 1e-20)
    dot = ((hf * (qw.float() * kw.float())) * key).sum(-1) * rstd * D**-0.5
    gate = torch.sigmoid(torch.copysign(dot.abs().clamp(min=1e-6).sqrt(), dot))
    return (hf + gate.unsqueeze(-1) * value.unsqueeze(1)).to(torch.bfloat16)


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
    del w8
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
          "torch layer us | torch/dsfold (layer) | torch/dsfold (wkv) | kernel | layer's wkv kernel |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for T in (1, 8, 64, 4096):
        us = float(c[f"wkv_t{T}_us"])
        gbs = float(c[f"wkv_t{T}_GBps"])
        tf = float(c[f"wkv_t{T}_TFLOPs"])
        lus = float(c[f"layer_t{T}_us"])
        tl, tw = res[f"torch_layer_t{T}_us"], res[f"torch_wkv_t{T}_us"]
        alone = float(c[f"wkv_t{T}_alone_us"])
        print(f"| {T} | {us:.1f} | {gbs:.0f} | {gbs / copy:.2f} | {tf:.1f} | {tf / res['fp8_ceiling_TFLOPs']:.2f} | "
              f"{alone:.1f} | {tw:.1f} | {lus:.1f} | {tl:.1f} | {tl / lus:.2f} | {tw / us:.2f} | "
              f"{c[f'wkv_t{T}_best']} | {c.get(f'layer_t{T}_wkv_geom', '?')} |")


if __name__ == "__main__":
    main()
