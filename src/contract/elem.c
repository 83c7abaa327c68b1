#include <string.h>

#include "base/formats.h"
#include "contract/contract.h"

size_t dsf_elem_bytes(dsf_elem e, int64_t count) {
    switch (e) {
    case DSF_ELEM_F32:
    case DSF_ELEM_I32: return (size_t)count * 4;
    case DSF_ELEM_BF16: return (size_t)count * 2;
    case DSF_ELEM_E4M3:
    case DSF_ELEM_E8M0: return (size_t)count;
    case DSF_ELEM_FP4X2: return (size_t)(count + 1) / 2;
    case DSF_ELEM_I64: return (size_t)count * 8;
    case DSF_ELEM_COUNT: break;
    }
    DSF_ASSERT(!"unknown element kind");
    return 0;
}

double dsf_elem_decode(dsf_elem e, const void *buf, int64_t i) {
    const uint8_t *b = buf;
    switch (e) {
    case DSF_ELEM_F32: {
        float f;
        memcpy(&f, b + 4 * i, 4);
        return f;
    }
    case DSF_ELEM_BF16: {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        return dsf_bf16_to_f32(h);
    }
    case DSF_ELEM_E4M3: return dsf_e4m3_to_f32(b[i]);
    case DSF_ELEM_E8M0: return dsf_e8m0_to_f32(b[i]);
    case DSF_ELEM_FP4X2: return dsf_e2m1_to_f32(dsf_fp4_get(b, (size_t)i));
    case DSF_ELEM_I32: {
        int32_t v;
        memcpy(&v, b + 4 * i, 4);
        return v;
    }
    case DSF_ELEM_I64: {
        int64_t v;
        memcpy(&v, b + 8 * i, 8);
        return (double)v;
    }
    case DSF_ELEM_COUNT: break;
    }
    DSF_ASSERT(!"unknown element kind");
    return 0;
}

const char *dsf_elem_name(dsf_elem e) {
    static const char *const names[] = {"f32", "bf16", "e4m3", "e8m0", "fp4x2", "i32", "i64"};
    return (unsigned)e < DSF_ELEM_COUNT ? names[e] : "?";
}

const char *dsf_backend_name(dsf_backend b) { return b == DSF_BACKEND_CPU ? "cpu" : "cuda"; }
