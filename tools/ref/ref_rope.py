# Rotary position embedding on the last rope_dim dims, interleaved pairs, YaRN on compressing layers (spec §3.0).
import math

import numpy as np


def yarn_low_high(rope_dim, base, orig_seq, beta_fast, beta_slow):
    def corr(r):
        return rope_dim * math.log(orig_seq / (2 * math.pi * r)) / (2 * math.log(base))
    low = max(math.floor(corr(beta_fast)), 0)
    high = min(math.ceil(corr(beta_slow)), rope_dim - 1)
    return low, high


def rope_freqs(rope_dim, base, yarn, factor=1.0, orig_seq=0, beta_fast=32.0, beta_slow=1.0):
    # f_i = 1 / base^(2i / rope_dim) in the reciprocal form of spec §6 finding 7, then the YaRN blend.
    f = 1.0 / (base ** (np.arange(0, rope_dim, 2, dtype=np.float64) / rope_dim))
    if yarn and orig_seq > 0:
        low, high = yarn_low_high(rope_dim, base, orig_seq, beta_fast, beta_slow)
        span = (high - low) if high != low else 1e-3
        ramp = np.clip((np.arange(rope_dim // 2, dtype=np.float64) - low) / span, 0.0, 1.0)
        f = f / factor * ramp + f * (1.0 - ramp)
    return f


def layer_freqs(cfg, ratio):
    if ratio == 0:
        return rope_freqs(cfg.rope_dim, cfg.rope_theta, False)
    return rope_freqs(cfg.rope_dim, cfg.compress_theta, True, cfg.rope_factor, cfg.orig_seq, cfg.beta_fast,
                      cfg.beta_slow)


def apply_rope(x, pos, freqs, inverse=False):
    # x [..., T, (H,) d]: pos [T]; rotates pairs (2i, 2i+1) of the last len(freqs)*2 dims; inverse uses the conjugate.
    x = np.array(x, dtype=np.float64)
    rd = 2 * len(freqs)
    ang = np.asarray(pos, dtype=np.float64)[:, None] * freqs[None, :]
    cos, sin = np.cos(ang), np.sin(ang)
    if inverse:
        sin = -sin
    shape = cos.shape[:1] + (1,) * (x.ndim - 2) + cos.shape[1:]
    cos, sin = cos.reshape(shape), sin.reshape(shape)
    tail = x[..., -rd:]
    a = tail[..., 0::2].copy()
    b = tail[..., 1::2].copy()
    tail[..., 0::2] = a * cos - b * sin
    tail[..., 1::2] = a * sin + b * cos
    x[..., -rd:] = tail
    return x
