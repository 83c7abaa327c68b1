# Engram n-gram hash memory (spec §3.2.6, §6.2 item 8): primes, multipliers, the hash, table rows, the gated add.
import numpy as np

import ref_quant as rq
from ref_io import linear
from ref_mhc import sigmoid

# spec §3.2.6: numpy default_rng(10007*L).integers(0, (2^63-1)//99092//2, 4, int64)*2+1, for the real config.
HARD_MULTIPLIERS = {
    (1, 99092, 4): (76632096046245, 4839876093313, 35959672319349, 73987337458391),
    (14, 99092, 4): (67716810739261, 51510806800915, 30921347202721, 82619226485591),
}


def is_prime(n):
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


def engram_primes(layers, max_ngram, n_heads, vocab_start):
    # Per layer, the primes of its columns in n-gram-major order; the used set is global over layers.
    used, out = set(), []
    for _ in layers:
        cols = []
        for _n in range(2, max_ngram + 1):
            cur = vocab_start - 1
            for _h in range(n_heads):
                cur += 1
                while not is_prime(cur) or cur in used:
                    cur += 1
                used.add(cur)
                cols.append(cur)
        out.append(cols)
    return out


def compute_multipliers(layer, max_ngram, cvocab):
    bound = max(1, (2 ** 63 - 1) // cvocab // 2)
    v = np.random.default_rng(10007 * layer).integers(0, bound, size=max_ngram, dtype=np.int64)
    return [int(x) * 2 + 1 for x in v]


def multipliers(layer, max_ngram, cvocab):
    hard = HARD_MULTIPLIERS.get((layer, cvocab, max_ngram))
    return list(hard) if hard is not None else compute_multipliers(layer, max_ngram, cvocab)


def identity_token_map(vocab):
    # The real map needs the tokenizer (spec §3.2.6 item 1); synthetic checkpoints default to map[i] = i.
    return np.arange(vocab, dtype=np.int64)


def load_token_map(path, vocab):
    # .npy, or text: ids one a line, optionally after the project's "dsfold-engram-map 1" and "N C" header lines.
    if path is None:
        return identity_token_map(vocab)
    if path.endswith(".npy"):
        m = np.load(path)
    else:
        with open(path) as f:
            lines = f.read().split("\n")
        if lines and lines[0].startswith("dsfold-engram-map"):
            lines = lines[2:]
        m = np.array([int(v) for ln in lines for v in ln.split()], dtype=np.int64)
    m = np.asarray(m, dtype=np.int64).reshape(-1)
    if m.size < vocab or (m < 0).any():
        raise ValueError(f"{path}: token map has {m.size} entries (need {vocab}) or negative ids")
    return m


class EngramLayer:
    def __init__(self, cfg, layer, primes, mult=None):
        self.layer = layer
        self.primes = np.array(primes, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.primes)[:-1]]).astype(np.int64)
        if mult is None:
            mult = multipliers(layer, cfg.engram_max_ngram, cfg.engram_cvocab)
        if len(mult) != cfg.engram_max_ngram:
            raise ValueError(f"engram layer {layer}: {len(mult)} multipliers, need {cfg.engram_max_ngram}")
        self.mult = np.array(mult, dtype=np.int64)
        self.rows = int(self.primes.sum())


def build_engram(cfg, mult_override=None):
    # mult_override {layer: [max_ngram ints]} replaces the rule's multipliers (an input, like the token map).
    ps = engram_primes(cfg.engram_layers, cfg.engram_max_ngram, cfg.engram_heads, cfg.engram_vocab)
    layers = {}
    for L, p, rows in zip(cfg.engram_layers, ps, cfg.engram_rows):
        layers[L] = EngramLayer(cfg, L, p, (mult_override or {}).get(L))
        if layers[L].rows != rows:
            raise ValueError(f"engram layer {L}: primes give {layers[L].rows} rows, config says {rows}")
    return layers


def hash_rows(hist, positions, el, max_ngram, n_heads, pad):
    # hist [P] compressed ids by absolute position (-1 = DEAD); returns table rows [len(positions), n_cols].
    out = np.empty((len(positions), (max_ngram - 1) * n_heads), dtype=np.int64)
    with np.errstate(over="ignore"):
        for i, t in enumerate(positions):
            blocked = False
            prods = []
            for k in range(max_ngram):
                src = int(hist[t - k]) if t >= k else -1
                blocked = blocked or t < k or src == -1
                # int64 products wrap (two's complement); only a map with ids >= the compressed vocab can overflow.
                prods.append(np.int64(pad if blocked else src) * el.mult[k])
            h = prods[0]
            for n in range(2, max_ngram + 1):
                h = h ^ prods[n - 1]
                cols = slice((n - 2) * n_heads, (n - 1) * n_heads)
                out[i, cols] = np.mod(h, el.primes[cols]) + el.offsets[cols]
    return out


def gather_rows(st, prefix, rows):
    w = st.raw(prefix + ".embed.weight")
    s = st.raw(prefix + ".embed.scale")
    flat = rows.reshape(-1)
    e = rq.E4M3_TABLE[w[flat]] * np.repeat(rq.e8m0_value(s[flat]), 32, axis=1)
    return e.reshape(rows.shape[0], -1)


def engram_forward(h, rows, wts, prefix, cfg):
    # h [T, hc, D], rows [T, n_cols]: h_k += sigmoid(copysign(sqrt(max(|dot_k|, 1e-6)), dot_k)) * value.
    e = gather_rows(wts.st, prefix, rows)
    kv = linear(e, wts, prefix + ".wkv")
    hc, d = cfg.hc, cfg.dim
    key = kv[:, :hc * d].reshape(-1, hc, d)
    value = kv[:, hc * d:]
    wt = wts.w(prefix + ".q_weight") * wts.w(prefix + ".k_weight")
    rstd = 1.0 / np.sqrt(np.mean(h * h, axis=-1) + cfg.eps) / np.sqrt(np.mean(key * key, axis=-1) + cfg.eps)
    dot = np.sum(h * wt[None] * key, axis=-1) * rstd * d ** -0.5
    gate = sigmoid(np.copysign(np.sqrt(np.maximum(np.abs(dot), 1e-6)), dot))
    return h + gate[:, :, None] * value[:, None, :]
