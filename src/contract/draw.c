#include "contract/draw.h"

#include <math.h>
#include <string.h>

#include "base/formats.h"
#include "base/rng.h"

uint64_t dsf_rng_next(uint64_t *state) { return dsf_splitmix_next(state); }

double dsf_rng_unit(uint64_t *state) { return (double)(dsf_rng_next(state) >> 11) * 0x1.0p-53; }

uint64_t dsf_rng_seed(uint64_t seed, const char *name, uint64_t index) {
    uint64_t h = seed ^ 0xcbf29ce484222325ull;
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    h ^= index * 0x9E3779B97F4A7C15ull;
    uint64_t s = h;
    return dsf_rng_next(&s);
}

// Activations: a per-draw magnitude of 2^[-6, 6], outliers up to 64x, negatives, and exact-tie values.
static float draw_act(uint64_t *rng, double mag, int weight) {
    double u = dsf_rng_unit(rng);
    double sign = (dsf_rng_next(rng) & 1) ? -1.0 : 1.0;
    double v;
    if (u < 0.15) {
        static const double ties[] = {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.5, 1.5, 3.0, 6.0, 1.0625, 1.1875};
        v = ties[dsf_rng_next(rng) % (sizeof ties / sizeof ties[0])] * ldexp(1.0, (int)(dsf_rng_next(rng) % 9) - 4);
    } else if (u < 0.17 && !weight) {
        v = (16.0 + 48.0 * dsf_rng_unit(rng)) * (0.5 + dsf_rng_unit(rng));
    } else {
        double g = 0;
        for (int i = 0; i < 4; i++) g += dsf_rng_unit(rng);
        v = fabs(g - 2.0) * 1.7 + 1e-3;
    }
    return (float)(sign * v * mag);
}

static void put_f32(void *buf, int64_t i, float f, dsf_elem e) {
    if (e == DSF_ELEM_BF16) {
        uint16_t h = dsf_bf16_from_f32(f);
        if ((h & 0x7fff) == 0) h |= 1;
        memcpy((uint8_t *)buf + 2 * i, &h, 2);
    } else {
        if (f == 0.0f) f = 1e-3f;
        memcpy((uint8_t *)buf + 4 * i, &f, 4);
    }
}

static void draw_float(const dsf_operand *op, void *buf, int64_t count, uint64_t *rng) {
    int weight = op->draw == DSF_DRAW_WEIGHT;
    double mag = weight ? 0.05 : 1.0;
    for (int64_t i = 0; i < count; i++) {
        if (i % 32 == 0 && !weight) mag = ldexp(1.0, (int)(dsf_rng_next(rng) % 13) - 6);
        float f = draw_act(rng, mag, weight);
        if (op->elem == DSF_ELEM_F32 && dsf_rng_unit(rng) < 0.1) {
            uint32_t u;
            memcpy(&u, &f, 4);
            u = (u & 0xFFFF0000u) | 0x8000u;
            memcpy(&f, &u, 4);
        }
        put_f32(buf, i, f, op->elem);
    }
}

static void draw_bytes(const dsf_operand *op, void *buf, int64_t count, uint64_t *rng) {
    uint8_t *b = buf;
    size_t n = dsf_elem_bytes(op->elem, count);
    for (size_t i = 0; i < n; i++) {
        uint8_t v;
        if (op->elem == DSF_ELEM_E8M0) {
            v = (uint8_t)(112 + dsf_rng_next(rng) % 24);
        } else if (op->elem == DSF_ELEM_FP4X2) {
            uint8_t lo = (uint8_t)(1 + dsf_rng_next(rng) % 7), hi = (uint8_t)(1 + dsf_rng_next(rng) % 7);
            v = (uint8_t)(lo | (dsf_rng_next(rng) & 1 ? 8 : 0) | (hi << 4) | (dsf_rng_next(rng) & 1 ? 0x80 : 0));
        } else if (op->draw == DSF_DRAW_SCALE) {
            v = (uint8_t)(0x20 + dsf_rng_next(rng) % 0x40);
        } else {
            do v = (uint8_t)dsf_rng_next(rng);
            while ((v & 0x7f) == 0x7f || (v & 0x7f) == 0);
        }
        b[i] = v;
    }
}

static void draw_int(const dsf_operand *op, void *buf, int64_t count, uint64_t *rng) {
    for (int64_t i = 0; i < count; i++) {
        int64_t v = 1 + (int64_t)(dsf_rng_next(rng) % 1000);
        if (op->elem == DSF_ELEM_I32) {
            int32_t w = (int32_t)v;
            memcpy((uint8_t *)buf + 4 * i, &w, 4);
        } else {
            memcpy((uint8_t *)buf + 8 * i, &v, 8);
        }
    }
}

void dsf_draw_operand(const dsf_operand *op, void *buf, int64_t count, const dsf_case *c, uint64_t *rng) {
    if (op->draw == DSF_DRAW_CUSTOM) {
        DSF_ASSERT(op->fill);
        op->fill(buf, count, c, rng);
        return;
    }
    switch (op->elem) {
    case DSF_ELEM_F32:
    case DSF_ELEM_BF16: draw_float(op, buf, count, rng); break;
    case DSF_ELEM_I32:
    case DSF_ELEM_I64: draw_int(op, buf, count, rng); break;
    default: draw_bytes(op, buf, count, rng); break;
    }
}
