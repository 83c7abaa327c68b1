#ifndef DSF_FORMATS_H
#define DSF_FORMATS_H
// Number formats of spec §3.0: bf16, fp8 e4m3fn, e8m0 scale bytes, fp4 e2m1 and nibble packing.
// Every function is a pure bit-level function usable on host and device (DSF_HD), so CPU and CUDA share the bits.
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define DSF_HD __host__ __device__ __forceinline__
#else
#define DSF_HD static inline
#endif

// API (implemented below in this header by the formats work):
// uint16_t dsf_bf16_from_f32(float x)      round to nearest even; NaN stays NaN (quiet)
// float    dsf_bf16_to_f32(uint16_t b)
// float    dsf_bf16_round(float x)         dsf_bf16_to_f32(dsf_bf16_from_f32(x))
// uint8_t  dsf_e4m3_from_f32(float x)      e4m3fn, RNE, saturating to +-448, NaN -> 0x7F (sign kept)
// float    dsf_e4m3_to_f32(uint8_t c)
// float    dsf_e8m0_to_f32(uint8_t b)      2^(b-127); 0xFF is NaN
// uint8_t  dsf_e2m1_from_f32(float x)      4-bit code, RNE with the spec's ties, saturating to +-6
// float    dsf_e2m1_to_f32(uint8_t code)
// uint8_t  dsf_fp4_get(const uint8_t *packed, size_t i)      even element in the low nibble
// void     dsf_fp4_set(uint8_t *packed, size_t i, uint8_t code)

#endif
