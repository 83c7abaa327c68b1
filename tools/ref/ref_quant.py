# Number formats and the quantisation steps that are part of the model's function (spec §3.0), in float64.
import numpy as np

E4M3_MAX = 448.0
E2M1_MAX = 6.0


def _decode_e4m3_table():
    t = np.empty(256, dtype=np.float64)
    for b in range(256):
        sign = -1.0 if b & 0x80 else 1.0
        e = (b >> 3) & 0xF
        m = b & 0x7
        if e == 0xF and m == 0x7:
            t[b] = np.nan
        elif e == 0:
            t[b] = sign * m * 2.0 ** -9
        else:
            t[b] = sign * (1.0 + m / 8.0) * 2.0 ** (e - 7)
    return t


E4M3_TABLE = _decode_e4m3_table()
E2M1_MAG = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_TABLE = np.concatenate([E2M1_MAG, -E2M1_MAG])


def e8m0_value(b):
    b = np.asarray(b, dtype=np.float64)
    return np.where(b == 255, np.nan, np.exp2(b - 127.0))


def bf16_bits_to_f64(u16):
    return (np.asarray(u16, dtype=np.uint32) << 16).view(np.float32).astype(np.float64)


def pow2_ceil(v):
    # Smallest power of two >= v (v > 0): the "add 1 to the exponent if the mantissa is nonzero" rule, exactly.
    m, e = np.frexp(np.asarray(v, dtype=np.float64))
    return np.ldexp(1.0, np.where(m == 0.5, e - 1, e).astype(np.int64))


def round_grid(v, lo_binade_exp, mant_bits):
    # Round to the nearest value of a binary float format with mant_bits of mantissa, ties to even.
    v = np.asarray(v, dtype=np.float64)
    a = np.abs(v)
    with np.errstate(divide="ignore"):
        ex = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    # log2 can be off by one ulp near powers of two: fix the binade with an exact comparison.
    ex = np.where(np.ldexp(1.0, ex.astype(np.int64)) > a, ex - 1, ex)
    ex = np.where(np.ldexp(1.0, (ex + 1).astype(np.int64)) <= a, ex + 1, ex)
    ex = np.maximum(ex, lo_binade_exp)
    quantum = np.ldexp(1.0, (ex - mant_bits).astype(np.int64))
    return np.sign(v) * np.round(a / quantum) * quantum


def e4m3_rne(v):
    # e4m3fn: normal binades from 2^-6, 3 mantissa bits, saturating at 448 (the model clamps before rounding).
    return np.clip(round_grid(v, -6, 3), -E4M3_MAX, E4M3_MAX)


def e2m1_rne(v):
    # e2m1: normal binades from 2^0, 1 mantissa bit; the grid 0, 0.5, 1, 1.5, 2, 3, 4, 6.
    return np.clip(round_grid(v, 0, 1), -E2M1_MAX, E2M1_MAX)


def _blocks(x, blk):
    x = np.asarray(x, dtype=np.float64)
    if x.shape[-1] % blk:
        raise ValueError(f"last dim {x.shape[-1]} is not a multiple of the quant block {blk}")
    return x.reshape(x.shape[:-1] + (x.shape[-1] // blk, blk))


def act_quant(x, blk):
    # FP8 e4m3 fake-quant of an activation per block of blk along the last dim, power-of-two (ue8m0) scales.
    xb = _blocks(x, blk)
    amax = np.maximum(np.abs(xb).max(axis=-1, keepdims=True), 1e-4)
    s = pow2_ceil(amax / E4M3_MAX)
    q = e4m3_rne(np.clip(xb / s, -E4M3_MAX, E4M3_MAX))
    return (q * s).reshape(np.shape(x))


def fp4_quant_e8m0(x, blk=32):
    # FP4 e2m1 fake-quant with power-of-two (E8M0) scales: index q/k (spec §3.2.5).
    xb = _blocks(x, blk)
    amax = np.maximum(np.abs(xb).max(axis=-1, keepdims=True), 6.0 * 2.0 ** -126)
    s = pow2_ceil(amax / E2M1_MAX)
    return (e2m1_rne(np.clip(xb / s, -E2M1_MAX, E2M1_MAX)) * s).reshape(np.shape(x))


def fp4_quant_e4m3(x, blk=16):
    # FP4 e2m1 fake-quant with e4m3 scales: the compressed KV cache (spec §3.2.4).
    xb = _blocks(x, blk)
    amax = np.maximum(np.abs(xb).max(axis=-1, keepdims=True), 6.0 * 2.0 ** -9)
    s = e4m3_rne(amax / E2M1_MAX)
    return (e2m1_rne(np.clip(xb / s, -E2M1_MAX, E2M1_MAX)) * s).reshape(np.shape(x))


def expand_scale(scale, rows, cols, brow, bcol):
    return np.repeat(np.repeat(scale, brow, axis=0)[:rows], bcol, axis=1)[:, :cols]


def dequant_fp8(w_u8, scale_u8, blk):
    # W[o, i] = e4m3(w) * 2^(S[o // blk, i // blk] - 127).
    w = E4M3_TABLE[np.asarray(w_u8, dtype=np.uint8)]
    o, i = w.shape
    return w * expand_scale(e8m0_value(scale_u8), o, i, blk, blk)


def unpack_fp4(packed_i8):
    # Two e2m1 codes per byte, the even element in the low nibble.
    b = np.asarray(packed_i8).view(np.uint8)
    out = np.empty(b.shape[:-1] + (b.shape[-1] * 2,), dtype=np.float64)
    out[..., 0::2] = E2M1_TABLE[b & 0xF]
    out[..., 1::2] = E2M1_TABLE[b >> 4]
    return out


def dequant_fp4(packed_i8, scale_u8):
    # W[o, k] = e2m1(w) * 2^(S[o, k // 32] - 127).
    w = unpack_fp4(packed_i8)
    o, k = w.shape
    return w * expand_scale(e8m0_value(scale_u8), o, k, 1, 32)
