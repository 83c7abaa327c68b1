#ifndef DSF_COMPRESS_MATH_H
#define DSF_COMPRESS_MATH_H
// Per-element math of the compressor shared by the CPU and CUDA code; each function is one fixed order of operations.
#include <math.h>

#include "base/quant.h"
#include "kern/compress/compress.h"

// Device code pins every rounding (no contraction); C11 host code has no contraction (ISO mode, -ffp-contract=off).
#if defined(__CUDA_ARCH__)
#define DSF_CMP_MADD(a, b, c) __fmaf_rn((a), (b), (c))
#define DSF_CMP_ADD(a, b) __fadd_rn((a), (b))
#define DSF_CMP_SUB(a, b) __fsub_rn((a), (b))
#define DSF_CMP_MUL(a, b) __fmul_rn((a), (b))
#define DSF_CMP_DIV(a, b) __fdiv_rn((a), (b))
#define DSF_CMP_LD(p) __ldcg(p)
#else
#define DSF_CMP_MADD(a, b, c) ((a) * (b) + (c))
#define DSF_CMP_ADD(a, b) ((a) + (b))
#define DSF_CMP_SUB(a, b) ((a) - (b))
#define DSF_CMP_MUL(a, b) ((a) * (b))
#define DSF_CMP_DIV(a, b) ((a) / (b))
#define DSF_CMP_LD(p) (*(p))
#endif

// The variants a kernel runs as: REAL is the kernel; the others are contract controls only.
typedef enum dsf_cmp_fault {
    DSF_CMP_REAL,
    DSF_CMP_NAN,      // gate 1: NaN in the last element of every entry
    DSF_CMP_GEOM,     // gate 2: wide geometries pool values in mirrored token order (ratio 1: rotate one position late)
    DSF_CMP_LATE,     // gate 3: an entry is emitted one step after its group's last token
    DSF_CMP_NO_APE,   // gate 3: APE not added to the scores
    DSF_CMP_NO_RESET, // gate 3: group 0 pools ring rows of positions before 0 (state of a previous sequence)
    DSF_CMP_BATCH,    // gate 4: calls of more than DSF_CMP_SUITE_MAX_SEG streams drop the last slice of the projection
    DSF_CMP_FAULTS
} dsf_cmp_fault;

#define DSF_CMP_SUITE_MAX_SEG 8

// One slice of a dot product: sequential from zero over n elements of x (fp32) and w (bf16).
DSF_HD float dsf_cmp_slice_dot(const float *x, const uint16_t *w, int n)
{
    float p = 0.0f;
    for (int k = 0; k < n; k++) p = DSF_CMP_MADD(x[k], dsf_bf16_to_f32(w[k]), p);
    return p;
}

// The canonical dot product of length K (a multiple of 32): slices in order, folded left; skip drops the last slice.
DSF_HD float dsf_cmp_dot(const float *x, const uint16_t *w, int K, int skip_last)
{
    int S = K / DSF_CMP_SLICES;
    float tot = dsf_cmp_slice_dot(x, w, S);
    for (int s = 1; s < DSF_CMP_SLICES - skip_last; s++) tot = DSF_CMP_ADD(tot, dsf_cmp_slice_dot(x + s * S, w + s * S, S));
    return tot;
}

// One slice of a sum of squares, sequential from zero.
DSF_HD float dsf_cmp_slice_sumsq(const float *v, int n)
{
    float p = 0.0f;
    for (int k = 0; k < n; k++) p = DSF_CMP_MADD(v[k], v[k], p);
    return p;
}

// The canonical sum of squares of n values (a multiple of 32), slices folded left.
DSF_HD float dsf_cmp_sumsq(const float *v, int n)
{
    int S = n / DSF_CMP_SLICES;
    float tot = dsf_cmp_slice_sumsq(v, S);
    for (int s = 1; s < DSF_CMP_SLICES; s++) tot = DSF_CMP_ADD(tot, dsf_cmp_slice_sumsq(v + s * S, S));
    return tot;
}

// RMSNorm's inverse rms from the sum of squares: 1/sqrt(ss/n + eps), correctly rounded steps (no rsqrt).
DSF_HD float dsf_cmp_inv_rms(float ss, int n, float eps)
{
    return DSF_CMP_DIV(1.0f, sqrtf(DSF_CMP_ADD(DSF_CMP_DIV(ss, (float)n), eps)));
}

// One normalised element: bf16((v * inv) * w).
DSF_HD float dsf_cmp_norm_elem(float v, float inv, uint16_t w)
{
    return dsf_bf16_round(DSF_CMP_MUL(DSF_CMP_MUL(v, inv), dsf_bf16_to_f32(w)));
}

// RoPE's angle of a pair: fp32(pos) * f in fp32.
DSF_HD float dsf_cmp_rope_angle(int64_t pos, float f)
{
    return DSF_CMP_MUL((float)pos, f);
}

// Rotates the interleaved pair (v[0], v[1]) by the angle of cosine c and sine s, each part rounded to bf16.
DSF_HD void dsf_cmp_rope_rot(float *v, float c, float s)
{
    float a = v[0], b = v[1];
    v[0] = dsf_bf16_round(DSF_CMP_SUB(DSF_CMP_MUL(a, c), DSF_CMP_MUL(b, s)));
    v[1] = dsf_bf16_round(DSF_CMP_ADD(DSF_CMP_MUL(a, s), DSF_CMP_MUL(b, c)));
}

// Rotates the interleaved pair (v[0], v[1]) by fp32(pos) * f as a complex64 product, each part rounded to bf16.
DSF_HD void dsf_cmp_rope_pair(float *v, int64_t pos, float f)
{
    float ang = dsf_cmp_rope_angle(pos, f);
    dsf_cmp_rope_rot(v, cosf(ang), sinf(ang));
}

// The QDQ kind of a layer's entries: 0 act_quant of the non-RoPE dims, 1 Hadamard then FP4 E8M0, 2 FP4 E4M3.
DSF_HD int dsf_cmp_quant_kind(const dsf_cmp_layer *L)
{
    return L->quant == DSF_CMP_Q_FP8_NOPE ? 0 : L->quant == DSF_CMP_Q_HAD_FP4 ? 1 : 2;
}

// The block size of a QDQ kind: 64, 32, 16 values.
DSF_HD int dsf_cmp_quant_blk(int kind)
{
    return kind == 0 ? 64 : kind == 1 ? 32 : 16;
}

// QDQ of one block of n bf16 values in place: kind 0 act_quant (ue8m0), 1 FP4 E8M0, 2 FP4 E4M3.
DSF_HD void dsf_cmp_qdq_block(float *v, int n, int kind)
{
    float amax = dsf_block_amax(v, n);
    float s = kind == 0 ? dsf_act_scale_pow2(amax) : kind == 1 ? dsf_fp4_scale_e8m0(amax) : dsf_fp4_scale_e4m3(amax);
    for (int i = 0; i < n; i++) v[i] = kind == 0 ? dsf_act_qdq_value(v[i], s) : dsf_fp4_qdq_value(v[i], s);
}

// A pooled token of an emission: its row (kv [C] then score+ape [C]) and the channel offset of its half.
typedef struct dsf_cmp_tok {
    const float *row;
    int off;
} dsf_cmp_tok;

// Softmax pooling of channel c over n tokens in position order: max, sum of exp, then sum of kv * (e / sum); mirror.
DSF_HD float dsf_cmp_pool(const dsf_cmp_tok *t, int n, int C, int c, int mirror)
{
    float m = -INFINITY, sum = 0.0f, acc = 0.0f;
    for (int i = 0; i < n; i++) m = fmaxf(m, DSF_CMP_LD(t[i].row + C + t[i].off + c));
    for (int i = 0; i < n; i++) sum = DSF_CMP_ADD(sum, expf(DSF_CMP_SUB(DSF_CMP_LD(t[i].row + C + t[i].off + c), m)));
    for (int i = 0; i < n; i++) {
        float p = DSF_CMP_DIV(expf(DSF_CMP_SUB(DSF_CMP_LD(t[i].row + C + t[i].off + c), m)), sum);
        const dsf_cmp_tok *v = mirror ? &t[n - 1 - i] : &t[i];
        acc = DSF_CMP_MADD(DSF_CMP_LD(v->row + v->off + c), p, acc);
    }
    return acc;
}

// Positions and channel offsets entry j pools: overlap takes group j-1 on half A (absent for j = 0), then group j.
DSF_HD int dsf_cmp_group(const dsf_cmp_layer *L, int64_t j, int no_reset, int64_t *q, int *off)
{
    int n = 0, r = L->ratio;
    if (L->overlap && (j > 0 || no_reset))
        for (int i = 0; i < r; i++) q[n] = (j - 1) * r + i, off[n++] = 0;
    for (int i = 0; i < r; i++) q[n] = j * r + i, off[n++] = L->overlap ? L->d : 0;
    return n;
}

// Which entry a token at position p emits (p = j*r + r - 1), or -1; LATE emits group j at p = j*r + r.
DSF_HD int64_t dsf_cmp_emits(int ratio, int64_t p, int late)
{
    if (late) return (p % ratio == 0 && p >= ratio) ? p / ratio - 1 : -1;
    return (p + 1) % ratio == 0 ? p / ratio : -1;
}

// One butterfly of a Hadamard stage of half-width h: pair i of n/2 becomes (a + b, a - b).
DSF_HD void dsf_cmp_hadamard_pair(float *v, int h, int i)
{
    int a = (i / h) * 2 * h + i % h;
    float x = v[a], y = v[a + h];
    v[a] = DSF_CMP_ADD(x, y);
    v[a + h] = DSF_CMP_SUB(x, y);
}

// The Hadamard output scale d^-0.5 in fp32.
DSF_HD float dsf_cmp_hadamard_scale(int d)
{
    return (float)(1.0 / sqrt((double)d));
}

#endif
