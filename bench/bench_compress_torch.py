#!/usr/bin/env python3
# The compressor's math in eager PyTorch (fp32 projections, no TF32) timed on the same GPU; joins bench_compress output.
import sys

import torch

REPS, TRIALS = 20, 15
VARIANTS = [("v41_r2", 2, 0, 1, 5120, 512), ("v41_r1", 1, 0, 1, 5120, 512), ("v4_r4", 4, 1, 0, 4096, 512),
            ("v4_r4_idx", 4, 1, 0, 4096, 128), ("v4_r128", 128, 0, 0, 4096, 512)]
GRID = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
MIDS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])


def rmsnorm(x, w, eps):
    x = x.float()
    return (x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps) * w.float()).bfloat16()


def rope(x, pos, freqs):
    r = x[..., -64:].float().unflatten(-1, (32, 2))
    cis = torch.polar(torch.ones_like(freqs), pos.float()[:, None] * freqs[None, :])
    y = torch.view_as_real(torch.view_as_complex(r.contiguous()) * cis).flatten(-2)
    return torch.cat([x[..., :-64], y.bfloat16()], -1)


def fp4_qdq(x, blk, e4m3):
    v = x.float().unflatten(-1, (-1, blk))
    amax = v.abs().amax(-1, keepdim=True)
    if e4m3:
        s = (amax.clamp(min=6 * 2 ** -9) / 6).to(torch.float8_e4m3fn).float()
    else:
        s = torch.exp2(torch.ceil(torch.log2(amax.clamp(min=6 * 2 ** -126) / 6)))
    q = (v / s).clamp(-6, 6)
    g = GRID.to(x.device)[torch.bucketize(q.abs(), MIDS.to(x.device))] * q.sign()
    return (g * s).flatten(-2).bfloat16()


def fp8_qdq(x, blk):
    v = x.float().unflatten(-1, (-1, blk))
    s = torch.exp2(torch.ceil(torch.log2(v.abs().amax(-1, keepdim=True).clamp(min=1e-4) / 448)))
    return ((v / s).clamp(-448, 448).to(torch.float8_e4m3fn).float() * s).flatten(-2).bfloat16()


def make(v, rows, dev):
    name, r, ov, v41, D, d = v
    C = (2 if ov else 1) * d
    g = torch.Generator(device="cpu").manual_seed(1)
    w = lambda *s: (torch.rand(*s, generator=g) - 0.5).mul(0.05).to(dev)
    m = dict(r=r, ov=ov, v41=v41, d=d, C=C, wkv=w(C, D).float(), wg=w(C, D).float(), ape=w(r, C).float(),
             norm=w(d).bfloat16(), wk=w(128, d).bfloat16(), kn=w(128).bfloat16(),
             freqs=torch.rand(32, generator=g).to(dev))
    m["x"] = w(rows, D).bfloat16()
    S = rows if rows <= 64 else 1
    m["state"] = torch.zeros(S, 2 * r if ov else r, 2 * C, device=dev)
    return m


def step(m, rows):
    r, d, C = m["r"], m["d"], m["C"]
    xf = m["x"].float()
    kv = xf @ m["wkv"].T
    if r == 1:
        lat = rmsnorm(kv.bfloat16(), m["norm"], 1e-20)
        pos = torch.arange(rows, device=xf.device)
    else:
        sc = xf @ m["wg"].T + m["ape"][0]
        if rows <= 64:
            st = m["state"]
            st[:, -1, :C] = kv
            st[:, -1, C:] = sc
            k, s = st[..., :C], st[..., C:]
            if m["ov"]:
                k = torch.cat([k[:, :r, :d], k[:, r:, d:]], 1)
                s = torch.cat([s[:, :r, :d], s[:, r:, d:]], 1)
            pos = torch.arange(rows, device=xf.device)
        else:
            G = rows // r
            k, s = kv[:G * r].view(G, r, -1), sc[:G * r].view(G, r, -1)
            if m["ov"]:
                k, s = k[..., d:], s[..., d:]
            pos = torch.arange(G, device=xf.device) * r
        lat = rmsnorm((k * s.softmax(1)).sum(1).bfloat16(), m["norm"], 1e-6)
    out = rope(lat, pos, m["freqs"])
    if m["v41"]:
        out = fp4_qdq(out, 16, True)
        key = rmsnorm((lat.float() @ m["wk"].float().T).bfloat16(), m["kn"], 1e-20)
        key = fp4_qdq(rope(key, pos, m["freqs"]), 32, False)
    elif d == 128:
        h = torch.tensor(1.0, device=xf.device)
        out = fp4_qdq(out.float() * h, 32, False)
    else:
        out = torch.cat([fp8_qdq(out[..., :d - 64], 64), out[..., d - 64:]], -1)
    return out


def timed(m, rows):
    for _ in range(3):
        step(m, rows)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t = []
    for _ in range(TRIALS):
        a.record()
        for _ in range(REPS):
            step(m, rows)
        b.record()
        torch.cuda.synchronize()
        t.append(a.elapsed_time(b) * 1e3 / REPS)
    return sorted(t)[TRIALS // 2]


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    ours = {}
    if len(sys.argv) > 1:
        for line in open(sys.argv[1]):
            f = line.split()
            if len(f) == 9 and f[1].isdigit():
                ours[(f[0], int(f[1]))] = float(f[2])
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"{'variant':10} {'rows':>5} {'torch_us':>10} {'dsfold_us':>10} {'speedup':>8}")
    for v in VARIANTS:
        for rows in (1, 8, 64, 4096):
            us = timed(make(v, rows, dev), rows)
            o = ours.get((v[0], rows))
            print(f"{v[0]:10} {rows:5d} {us:10.2f} {o if o else float('nan'):10.2f} {us / o if o else float('nan'):8.2f}")


if __name__ == "__main__":
    main()
