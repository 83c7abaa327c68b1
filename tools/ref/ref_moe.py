# Mixture of experts (spec §3.2.7, §6.2 item 6): sqrt-softplus router, biased selection, FP4 experts, FP8 shared.
import numpy as np

from ref_io import linear, topk_desc


def softplus(z):
    # torch's softplus with threshold 20: the identity above it (part of the official function, kept).
    return np.where(z > 20.0, z, np.log1p(np.exp(np.minimum(z, 20.0))))


def route(x, wts, prefix, cfg):
    # Returns the selected experts [T, k] (ascending per token) and their weights [T, k].
    z = x @ wts.w(prefix + ".gate.weight").T
    s = np.sqrt(softplus(z / cfg.gate_temp))
    sel = s + wts.w(prefix + ".gate.bias")
    idx = np.stack([topk_desc(sel[t], cfg.top_k) for t in range(x.shape[0])])
    w = np.take_along_axis(s, idx, axis=1)
    if cfg.norm_topk and cfg.top_k > 1:
        w = w / (w.sum(axis=1, keepdims=True) + 1e-20)
    w = w * cfg.route_scale
    order = np.argsort(idx, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(w, order, axis=1)


def silu(g):
    return g / (1.0 + np.exp(-g))


def expert(x, wts, prefix, cfg, weight=None):
    g = linear(x, wts, prefix + ".w1")
    u = linear(x, wts, prefix + ".w3")
    if cfg.swiglu_limit > 0:
        u = np.clip(u, -cfg.swiglu_limit, cfg.swiglu_limit)
        g = np.minimum(g, cfg.swiglu_limit)
    t = silu(g) * u
    if weight is not None:
        t = weight[:, None] * t
    return linear(t, wts, prefix + ".w2")


def moe(x, wts, prefix, cfg, trace=None):
    # x [T, D] -> [T, D]: routed experts summed in ascending expert id, then the shared expert (clamped too).
    idx, w = route(x, wts, prefix, cfg)
    if trace is not None:
        trace["experts"] = idx
    y = np.zeros_like(x)
    for e in np.unique(idx):
        rows, slot = np.nonzero(idx == e)
        y[rows] += expert(x[rows], wts, f"{prefix}.experts.{e}", cfg, w[rows, slot])
    return y + expert(x, wts, prefix + ".shared_experts", cfg)
