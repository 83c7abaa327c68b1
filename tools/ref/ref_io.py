# Checkpoint access (safetensors, config.json in the HF V4.1 layout, layer roles) and the shared primitives.
import json
import os
import struct

import numpy as np

import ref_quant as rq

ST_DTYPES = {"BF16": np.uint16, "F32": np.float32, "F64": np.float64, "F8_E4M3": np.uint8, "F8_E8M0": np.uint8,
             "I8": np.int8, "I32": np.int32, "I64": np.int64, "U8": np.uint8, "F16": np.float16}


class SafeTensors:
    # Every tensor of every shard of a checkpoint directory, memory-mapped, by name.
    def __init__(self, model_dir):
        self.dir = model_dir
        index = os.path.join(model_dir, "model.safetensors.index.json")
        if os.path.exists(index):
            with open(index) as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
        else:
            shards = sorted(n for n in os.listdir(model_dir) if n.endswith(".safetensors"))
        if not shards:
            raise FileNotFoundError(f"{model_dir}: no safetensors shards")
        self.entries = {}
        for shard in shards:
            self._read_header(os.path.join(model_dir, shard))

    def _read_header(self, path):
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        mm = np.memmap(path, dtype=np.uint8, mode="r")
        for name, e in header.items():
            if name == "__metadata__":
                continue
            if e["dtype"] not in ST_DTYPES:
                raise ValueError(f"{path}: tensor {name}: dtype {e['dtype']} not supported")
            b0, b1 = e["data_offsets"]
            self.entries[name] = (e["dtype"], tuple(e["shape"]), mm, 8 + n + b0, 8 + n + b1)

    def __contains__(self, name):
        return name in self.entries

    def dtype(self, name):
        return self.entries[name][0]

    def raw(self, name):
        dt, shape, mm, a, b = self.entries[name]
        return mm[a:b].view(ST_DTYPES[dt]).reshape(shape)

    def f64(self, name):
        dt = self.dtype(name)
        r = self.raw(name)
        if dt == "BF16":
            return rq.bf16_bits_to_f64(r)
        if dt in ("F32", "F64", "F16", "I8", "I32", "I64"):
            return np.asarray(r, dtype=np.float64)
        raise ValueError(f"tensor {name}: dtype {dt} needs a dequantisation, not a cast")


class Config:
    # The text_config fields the forward uses, with the spec's names; every dimension comes from here.
    def __init__(self, path):
        with open(path) as f:
            top = json.load(f)
        if top.get("model_type") != "deepseek_v41":
            raise ValueError(f"{path}: model_type {top.get('model_type')!r}: the reference is for deepseek_v41")
        t = top["text_config"]
        q = top["quantization_config"]
        self.vocab = t["vocab_size"]
        self.dim = t["hidden_size"]
        self.n_layers = t["num_hidden_layers"]
        self.n_heads = t["num_attention_heads"]
        self.head_dim = t["head_dim"]
        self.rope_dim = t["qk_rope_head_dim"]
        self.q_lora = t["q_lora_rank"]
        self.o_groups = t["o_groups"]
        self.o_lora = t["o_lora_rank"]
        self.window = t["sliding_window"]
        self.ratios = list(t["compress_ratios"][: self.n_layers])
        self.kv_sources = list(t["kv_source_layer_ids"])
        self.index_sources = list(t["index_source_layer_ids"])
        self.cand_source = t.get("candidate_source_layer_id", -1)
        self.cand_blocks = t.get("candidate_topk_blocks", 0)
        self.cand_block_size = t.get("candidate_block_size", 1)
        self.index_heads = t["index_n_heads"]
        self.index_dim = t["index_head_dim"]
        self.index_topk = t["index_topk"]
        self.rope_theta = float(t["rope_theta"])
        self.compress_theta = float(t["compress_rope_theta"])
        rs = t.get("rope_scaling") or {}
        self.rope_factor = float(rs.get("factor", 1.0))
        self.orig_seq = int(rs.get("original_max_position_embeddings", 0))
        self.beta_fast = float(rs.get("beta_fast", 32))
        self.beta_slow = float(rs.get("beta_slow", 1))
        self.eps = float(t["rms_norm_eps"])
        self.n_experts = t["n_routed_experts"]
        self.top_k = t["num_experts_per_tok"]
        self.moe_inter = t["moe_intermediate_size"]
        self.norm_topk = bool(t.get("norm_topk_prob", True))
        self.route_scale = float(t["routed_scaling_factor"])
        self.swiglu_limit = float(t.get("swiglu_limit", 0.0))
        self.gate_temp = float(t.get("gate_temp", 1.0))
        self.hc = t["hc_mult"]
        self.sinkhorn_iters = t["hc_sinkhorn_iters"]
        self.hc_eps = float(t["hc_eps"])
        self.engram_layers = list(t.get("engram_layer_ids", []))
        self.engram_rows = list(t.get("engram_num_embeddings", []))
        self.engram_max_ngram = t.get("engram_max_ngram_size", 0)
        self.engram_heads = t.get("engram_n_heads", 0)
        self.engram_head_dim = t.get("engram_head_dim", 0)
        self.engram_vocab = t.get("engram_vocab_size", 0)
        self.engram_pad_id = t.get("engram_pad_token_id", 2)
        self.engram_cvocab = t.get("engram_compressed_vocab_size", 0)
        self.blk = int(q["weight_block_size"][0])
        if q.get("expert_dtype") != "fp4" or q["weight_block_size"][0] != q["weight_block_size"][1]:
            raise ValueError(f"{path}: quantization_config: need square FP8 blocks and fp4 experts")
        self.roles = build_roles(self)


class Role:
    # What layer L owns and reads (spec §2.2 roles table, §6 finding 22, the project decision on finding 1).
    def __init__(self, layer, ratio):
        self.layer = layer
        self.ratio = ratio
        self.kv_owner = False
        self.index_owner = False
        self.owns_index_keys = False
        self.cand_source = False
        self.cand_masked = False
        self.kv_from = -1
        self.topk_from = -1
        self.keys_from = -1


def _latest(sources, layer):
    older = [s for s in sources if s <= layer]
    return older[-1] if older else -1


def build_roles(c):
    roles = []
    for L in range(c.n_layers):
        r = Role(L, c.ratios[L])
        if r.ratio > 0:
            r.kv_owner = L in c.kv_sources
            r.index_owner = L in c.index_sources
            r.owns_index_keys = r.kv_owner and r.index_owner
            r.cand_source = L == c.cand_source
            r.cand_masked = r.index_owner and 0 <= c.cand_source < L and c.ratios[c.cand_source] == r.ratio
            r.kv_from = _latest(c.kv_sources, L)
            r.topk_from = _latest(c.index_sources, L)
            r.keys_from = L if r.owns_index_keys else r.kv_from
            if r.kv_from < 0 or r.topk_from < 0 or c.ratios[r.kv_from] != r.ratio or c.ratios[r.topk_from] != r.ratio:
                raise ValueError(f"layer {L}: ratio {r.ratio} has no earlier kv or index source of that ratio")
        roles.append(r)
    return roles


class Weights:
    # Dequantised float64 weights, converted on first use and kept (the reference is for small checkpoints).
    def __init__(self, st, cfg):
        self.st = st
        self.cfg = cfg
        self.cache = {}

    def has(self, name):
        return name + ".weight" in self.st or name in self.st

    def get(self, name):
        if name in self.cache:
            return self.cache[name]
        st = self.st
        if name + ".weight" in st:
            wname = name + ".weight"
            dt = st.dtype(wname)
            if dt == "F8_E4M3":
                w = rq.dequant_fp8(st.raw(wname), st.raw(name + ".scale"), self.cfg.blk)
            elif dt == "I8":
                w = rq.dequant_fp4(st.raw(wname), st.raw(name + ".scale"))
            else:
                w = st.f64(wname)
            kind = dt
        else:
            w = st.f64(name)
            kind = st.dtype(name)
        self.cache[name] = (w, kind)
        return self.cache[name]

    def w(self, name):
        return self.get(name)[0]

    def rows_f64(self, name, ids):
        # Rows of a large BF16 table (embed) without converting the whole table.
        return rq.bf16_bits_to_f64(self.st.raw(name)[np.asarray(ids)])


def linear(x, wts, name):
    # spec §3.0 linear: FP8/FP4 weights see the act_quant'd activation; BF16/F32 weights see x as is.
    w, kind = wts.get(name)
    if kind in ("F8_E4M3", "I8"):
        x = rq.act_quant(x, wts.cfg.blk)
    return x @ w.T


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def topk_desc(scores, k):
    # The project's fixed top-k order: higher score first, then lower index; -inf entries rank last (still pickable).
    scores = np.asarray(scores, dtype=np.float64)
    order = np.lexsort((np.arange(scores.shape[-1]), -scores))
    return order[:k]
