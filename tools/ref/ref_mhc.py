# Manifold hyper-connections (mHC, spec §3.0 and §3.2.2): mixes, the Sinkhorn split, the collapse and the expand.
import numpy as np


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def mixes(h, fn, eps):
    # h [T, hc, D]; flattened stream-major (index j*D + c, spec §6 finding 25); fn [(2+hc)*hc, hc*D]; no norm weight.
    xf = h.reshape(h.shape[0], -1)
    return (xf @ fn.T) / np.sqrt(np.mean(xf * xf, axis=-1, keepdims=True) + eps)


def sinkhorn_split(mix, scale, base, hc, iters, hc_eps):
    # mix [T, (2+hc)*hc] -> pre [T, hc], post [T, hc], comb [T, hc, hc] (row j = source stream, column k = target).
    pre = sigmoid(mix[:, :hc] * scale[0] + base[:hc]) + hc_eps
    post = 2.0 * sigmoid(mix[:, hc:2 * hc] * scale[1] + base[hc:2 * hc])
    c = (mix[:, 2 * hc:] * scale[2] + base[2 * hc:]).reshape(-1, hc, hc)
    c = np.exp(c - c.max(axis=-1, keepdims=True))
    # The first iteration: a plain row softmax with eps added after it (spec §6 finding 19), then a column step.
    c = c / c.sum(axis=-1, keepdims=True) + hc_eps
    c = c / (c.sum(axis=-2, keepdims=True) + hc_eps)
    for _ in range(iters - 1):
        c = c / (c.sum(axis=-1, keepdims=True) + hc_eps)
        c = c / (c.sum(axis=-2, keepdims=True) + hc_eps)
    return pre, post, c


def split(h, wts, prefix, cfg):
    m = mixes(h, wts.w(prefix + "_fn"), cfg.eps)
    return sinkhorn_split(m, wts.w(prefix + "_scale"), wts.w(prefix + "_base"), cfg.hc, cfg.sinkhorn_iters,
                          cfg.hc_eps)


def hc_pre(h, pre):
    # y = sum_j pre_j * h_j.
    return np.einsum("tj,tjd->td", pre, h)


def hc_post(f, res, post, comb):
    # new_k = post_k * f + sum_j C[j][k] * res_j.
    return post[:, :, None] * f[:, None, :] + np.einsum("tjk,tjd->tkd", comb, res)
