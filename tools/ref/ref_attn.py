# CSA2 attention (spec §3.2.3-§3.2.5, §6.2 items 1-5): window, compressor, two-level indexer, sparse attention.
import numpy as np

import ref_quant as rq
from ref_io import linear, rms_norm, topk_desc
from ref_rope import apply_rope


KV_FP8_BLOCK = 32


class AttnState:
    # Caches by absolute position for one sequence; per-call top-k lists and candidate masks live in `call`.
    def __init__(self):
        self.win = {}  # layer -> [P, hd] window K=V rows, post-RoPE, FP8 QDQ
        self.kv_raw = {}  # kv source -> [P, hd] compressor KV projections (pre-pool)
        self.sc_raw = {}  # kv source -> [P, hd] compressor score projections (ratio > 1)
        self.cmp = {}  # kv source -> [J, hd] compressed KV, post-RoPE at j*r, FP4 (16, e4m3) QDQ
        self.ikeys = {}  # index-key owner -> [J, index_dim] keys, post-RoPE at j*r, FP4 (32, e8m0) QDQ
        self.call = {}


def _append(store, key, rows, width):
    old = store.get(key, np.zeros((0, width)))
    store[key] = np.concatenate([old, rows], axis=0)


def compress(x, pos, wts, pre, role, st, cfg):
    # The kv source's new latents (pre-RoPE) and their entry ids: entry j pools positions j*r .. j*r+r-1.
    r = role.ratio
    L = role.layer
    _append(st.kv_raw, L, linear(x, wts, pre + ".compressor.wkv"), cfg.head_dim)
    gated = wts.has(pre + ".compressor.wgate")
    if gated:
        _append(st.sc_raw, L, linear(x, wts, pre + ".compressor.wgate"), cfg.head_dim)
    elif r != 1:
        raise ValueError(f"layer {L}: ratio {r} compressor without wgate")
    js = np.array([p // r for p in pos if (p + 1) % r == 0], dtype=np.int64)
    if js.size == 0:
        return np.zeros((0, cfg.head_dim)), js
    kv = st.kv_raw[L]
    pooled = []
    for j in js:
        g = kv[j * r:(j + 1) * r]
        if gated:
            sc = st.sc_raw[L][j * r:(j + 1) * r]
            e = np.exp(sc - sc.max(axis=0, keepdims=True))
            g = e / e.sum(axis=0, keepdims=True) * g
        pooled.append(g.sum(axis=0))
    return rms_norm(np.array(pooled), wts.w(pre + ".compressor.norm.weight"), cfg.eps), js


def candidate_mask(scores, vis, cfg):
    # Layer 20's two-level step (spec §6.2 item 5): best blocks by max score, the newest block forced in.
    bs = cfg.cand_block_size
    nb = -(-vis // bs)
    padded = np.full(nb * bs, -np.inf)
    padded[:vis] = scores
    blk = padded.reshape(nb, bs).max(axis=1)
    blk[(vis - 1) // bs] = np.inf
    pick = topk_desc(blk, min(cfg.cand_blocks, nb))
    pick = pick[blk[pick] > -np.inf]
    mask = np.zeros(nb * bs, dtype=bool)
    for b in pick:
        mask[b * bs:(b + 1) * bs] = True
    return mask[:vis]


def indexer(x, qr, pos, wts, pre, role, st, cfg, freqs):
    # Per query: the compressed entries it attends to, ascending (spec §3.2.5, with the fixed tie order).
    r = role.ratio
    ih, idim = cfg.index_heads, cfg.index_dim
    q = linear(qr, wts, pre + ".indexer.wq_b").reshape(len(pos), ih, idim)
    q = rq.fp4_quant_e8m0(apply_rope(q, pos, freqs), 32)
    w = linear(x, wts, pre + ".indexer.weights_proj") * (idim ** -0.5 * ih ** -0.5)
    keys = st.ikeys.get(role.keys_from, np.zeros((0, idim)))
    out, cands = [], []
    for t, p in enumerate(pos):
        vis = (p + 1) // r
        if vis == 0:
            out.append(np.zeros(0, dtype=np.int64))
            cands.append(None)
            continue
        sc = np.maximum(q[t] @ keys[:vis].T, 0.0).T @ w[t]
        if role.cand_source:
            cands.append(candidate_mask(sc, vis, cfg))
        if role.cand_masked:
            sc = np.where(st.call["cand"][t], sc, -np.inf)
        # Non-candidates at -inf stay pickable when fewer than k candidates are visible (official semantics).
        out.append(np.sort(topk_desc(sc, min(cfg.index_topk, vis))))
    if role.cand_source:
        st.call["cand"] = cands
    return out


def sparse_attn(q, ent, sink, scale):
    # q [H, hd], ent [n, hd] (K = V): softmax over the entries plus a per-head sink logit that carries no value.
    if ent.shape[0] == 0:
        return np.zeros_like(q)
    logits = (q @ ent.T) * scale
    m = np.maximum(logits.max(axis=1), sink)
    p = np.exp(logits - m[:, None])
    return (p @ ent) / (p.sum(axis=1) + np.exp(sink - m))[:, None]


def attention(x, pos, wts, pre, role, st, cfg, freqs):
    # x [T, D] (after attn_norm) at absolute positions pos [T] -> [T, D].
    T = len(pos)
    H, hd = cfg.n_heads, cfg.head_dim
    qr = rms_norm(linear(x, wts, pre + ".wq_a"), wts.w(pre + ".q_norm.weight"), cfg.eps)
    q = apply_rope(linear(qr, wts, pre + ".wq_b").reshape(T, H, hd), pos, freqs)
    kv = rms_norm(linear(x, wts, pre + ".wkv"), wts.w(pre + ".kv_norm.weight"), cfg.eps)
    kv = rq.act_quant(apply_rope(kv, pos, freqs), KV_FP8_BLOCK)
    L = role.layer
    held = st.win.get(L, np.zeros((0, hd))).shape[0]
    if held != pos[0]:
        raise ValueError(f"layer {L}: window cache holds {held} positions, the call starts at {pos[0]}")
    _append(st.win, L, kv, hd)
    topk = None
    if role.ratio > 0:
        r = role.ratio
        if role.kv_owner:
            latent, js = compress(x, pos, wts, pre, role, st, cfg)
            if role.owns_index_keys:
                k = rms_norm(linear(latent, wts, pre + ".indexer.wk"), wts.w(pre + ".indexer.k_norm.weight"),
                             cfg.eps)
                _append(st.ikeys, L, rq.fp4_quant_e8m0(apply_rope(k, js * r, freqs), 32), cfg.index_dim)
            _append(st.cmp, L, rq.fp4_quant_e4m3(apply_rope(latent, js * r, freqs), 16), hd)
        if role.index_owner:
            st.call[("topk", L)] = indexer(x, qr, pos, wts, pre, role, st, cfg, freqs)
        topk = st.call[("topk", role.topk_from)]
        cmp = st.cmp.get(role.kv_from, np.zeros((0, hd)))
    sink = wts.w(pre + ".attn_sink")
    o = np.empty((T, H, hd))
    win = st.win[L]
    for t, p in enumerate(pos):
        ent = win[max(0, p - cfg.window + 1):p + 1]
        if topk is not None and topk[t].size:
            ent = np.concatenate([ent, cmp[topk[t]]], axis=0)
        o[t] = sparse_attn(q[t], ent, sink, hd ** -0.5)
    o = apply_rope(o, pos, freqs, inverse=True)
    g = cfg.o_groups
    wo_a = wts.w(pre + ".wo_a").reshape(g, cfg.o_lora, H * hd // g)
    u = np.einsum("tgi,goi->tgo", o.reshape(T, g, H * hd // g), wo_a).reshape(T, g * cfg.o_lora)
    return linear(u, wts, pre + ".wo_b")
