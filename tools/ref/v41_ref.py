#!/usr/bin/env python3
# Independent float64 reference of the DeepSeek-V4.1-Flash forward pass, written from spec/deepseek-v4.md.
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ref_engram  # noqa: E402
from ref_attn import AttnState, attention  # noqa: E402
from ref_io import Config, SafeTensors, Weights, rms_norm  # noqa: E402
from ref_mhc import hc_post, hc_pre, split  # noqa: E402
from ref_moe import moe  # noqa: E402
from ref_rope import layer_freqs  # noqa: E402


class Model:
    # Shapes: T tokens, hc streams, D model dim, V vocab, L layers.
    def __init__(self, model_dir, token_map=None, engram_mult=None):
        self.cfg = Config(os.path.join(model_dir, "config.json"))
        self.wts = Weights(SafeTensors(model_dir), self.cfg)
        self.engram = ref_engram.build_engram(self.cfg, engram_mult)
        self.token_map = ref_engram.load_token_map(token_map, self.cfg.vocab)
        self.identity_map = token_map is None
        self.pad = int(self.token_map[self.cfg.engram_pad_id])
        self.freqs = [layer_freqs(self.cfg, r) for r in self.cfg.ratios]

    def new_state(self):
        return State()

    def block(self, L, h, pre_mix, pos, st, trace):
        # The lagged schedule (spec §3.2.2): attention collapses with the previous FFN's pre, the FFN with a_pre.
        cfg, wts, p = self.cfg, self.wts, f"layers.{L}"
        res = h
        a_pre, a_post, a_comb = split(h, wts, p + ".hc_attn", cfg)
        x = rms_norm(hc_pre(h, pre_mix), wts.w(p + ".attn_norm.weight"), cfg.eps)
        h = hc_post(attention(x, pos, wts, p + ".attn", cfg.roles[L], st.attn, cfg, self.freqs[L]), res, a_post,
                    a_comb)
        res = h
        f_pre, f_post, f_comb = split(h, wts, p + ".hc_ffn", cfg)
        x = rms_norm(hc_pre(h, a_pre), wts.w(p + ".ffn_norm.weight"), cfg.eps)
        h = hc_post(moe(x, wts, p + ".ffn", cfg, trace), res, f_post, f_comb)
        return h, f_pre

    def forward(self, ids, st):
        # Runs ids at positions st.pos .. st.pos+T-1 (any chunking); returns this call's part of run()'s dict.
        cfg = self.cfg
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.size == 0 or (ids < 0).any() or (ids >= cfg.vocab).any():
            raise ValueError(f"token ids must be 1 or more values in [0, {cfg.vocab})")
        T = ids.size
        pos = np.arange(st.pos, st.pos + T, dtype=np.int64)
        st.hist = np.concatenate([st.hist, self.token_map[ids]])
        st.attn.call = {}
        e = self.wts.rows_f64("embed.weight", ids)
        h = np.repeat(e[:, None, :], cfg.hc, axis=1)
        pre_mix = np.zeros((T, cfg.hc))
        pre_mix[:, 0] = 1.0
        hidden = np.empty((cfg.n_layers, T, cfg.hc, cfg.dim))
        topk = np.full((cfg.n_layers, T, cfg.index_topk), -1, dtype=np.int64)
        experts = np.empty((cfg.n_layers, T, cfg.top_k), dtype=np.int64)
        for L in range(cfg.n_layers):
            if L in self.engram:
                rows = ref_engram.hash_rows(st.hist, pos, self.engram[L], cfg.engram_max_ngram, cfg.engram_heads,
                                            self.pad)
                h = ref_engram.engram_forward(h, rows, self.wts, f"layers.{L}.engram", cfg)
            trace = {}
            h, pre_mix = self.block(L, h, pre_mix, pos, st, trace)
            hidden[L] = h
            experts[L] = trace["experts"]
            if cfg.roles[L].ratio > 0:
                for t, sel in enumerate(st.attn.call[("topk", cfg.roles[L].topk_from)]):
                    topk[L, t, :sel.size] = sel
        st.pos += T
        y = rms_norm(hc_pre(h, pre_mix), self.wts.w("norm.weight"), cfg.eps)
        return {"ids": ids, "hidden": hidden, "y": y, "topk": topk, "experts": experts}

    def logits(self, y, chunk=16384):
        # y [T, D] -> [T, V], the BF16 head converted a slice at a time.
        raw = self.wts.st.raw("head.weight")
        out = np.empty((y.shape[0], raw.shape[0]))
        for a in range(0, raw.shape[0], chunk):
            w = (np.asarray(raw[a:a + chunk], dtype=np.uint32) << 16).view(np.float32).astype(np.float64)
            out[:, a:a + chunk] = y @ w.T
        return out


class State:
    # One sequence: the position count, the Engram hash history and the attention caches.
    def __init__(self):
        self.pos = 0
        self.hist = np.zeros(0, dtype=np.int64)
        self.attn = AttnState()


def run(model, ids, decode_from=None):
    # Prefill all ids at once, or ids[:decode_from] then one token per call; the dict's keys: docs/reference.md.
    st = model.new_state()
    ids = np.asarray(ids, dtype=np.int64)
    if decode_from is None:
        return model.forward(ids, st)
    parts = [model.forward(ids[:decode_from], st)] if decode_from > 0 else []
    parts += [model.forward(ids[i:i + 1], st) for i in range(decode_from, len(ids))]
    return {k: np.concatenate([p[k] for p in parts], axis=0 if k in ("ids", "y") else 1) for k in parts[0]}


def reference(model_dir, ids, decode_from=None, token_map=None, engram_mult=None):
    # The function API: run()'s dict plus logits [T, V].
    model = Model(model_dir, token_map, engram_mult)
    out = run(model, ids, decode_from)
    out["logits"] = model.logits(out["y"])
    return out


def parse_mult(specs):
    out = {}
    for s in specs or []:
        layer, _, vals = s.partition(":")
        out[int(layer)] = [int(v) for v in vals.split(",")]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="float64 reference forward of DeepSeek-V4.1-Flash (docs/reference.md)")
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json + safetensors shards)")
    ap.add_argument("--ids", required=True, help="comma-separated token ids")
    ap.add_argument("--token-map", help="Engram compressed token map (.npy or text, one id a line); default: identity")
    ap.add_argument("--engram-mult", action="append", metavar="L:M0,M1,M2,M3",
                    help="use these hash multipliers for Engram layer L instead of the spec's rule (repeatable)")
    ap.add_argument("--decode-from", type=int, help="prefill this many ids, then feed the rest one at a time")
    ap.add_argument("--dump", help="write ids, hidden [L, T, hc, D], logits [T, V], topk and experts to this .npz")
    a = ap.parse_args(argv)
    try:
        ids = np.array([int(s) for s in a.ids.split(",") if s.strip()], dtype=np.int64)
    except ValueError:
        ap.error(f"--ids: not a comma-separated list of integers: {a.ids!r}")
    model = Model(a.model, a.token_map, parse_mult(a.engram_mult))
    if model.identity_map and model.engram:
        print("note: Engram uses the identity token map (map[i] = i); pass --token-map for a real tokenizer's map")
    out = run(model, ids, a.decode_from)
    logits = model.logits(out["y"])
    last = logits[-1]
    top = np.argsort(-last, kind="stable")[:5]
    print(f"tokens {len(ids)}  argmax {int(top[0])}")
    print("top5 " + " ".join(f"{int(i)}:{last[i]:.6f}" for i in top))
    print(f"last logits: mean {last.mean():.6f} std {last.std():.6f} min {last.min():.6f} max {last.max():.6f}")
    print(f"finite {bool(np.isfinite(logits).all())}")
    if a.dump:
        np.savez(a.dump, ids=ids, hidden=out["hidden"], logits=logits, topk=out["topk"], experts=out["experts"])
        print(f"wrote {a.dump}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
