#ifndef DSF_COMPRESS_SGEMV_CUH
#define DSF_COMPRESS_SGEMV_CUH
// The sliced path's projection for few rows: a thread one output's slice chains for a group of SR rows.
#include "kern/compress/compress_emit.cuh"

// Rows a block, the longest slice it stages (D up to 8192), weight vectors in flight a thread.
enum { SR = 8, SG_MAX_S = 256, SG_CH = 8 };

// Block (64 outputs, SR rows from y SR, slice z): each chain from zero over the slice in K order, into part, unfolded.
__global__ void __launch_bounds__(64) cmp_sgemv(dsf_cmp_layer L, dsf_cmp_batch b, float *part) {
    __shared__ __align__(16) float xs[SR][SG_MAX_S];
    int O = dsf_cmp_proj_outputs_dev(L), C = dsf_cmp_channels_dev(L), D = L.dim, S = D / DSF_CMP_SLICES, nv = S / 8;
    int sl = blockIdx.z, o = blockIdx.x * 64 + threadIdx.x, oc = o < O ? o : O - 1;
    int64_t r0 = (int64_t)blockIdx.y * SR;
    int nr = b.rows - r0 < SR ? (int)(b.rows - r0) : SR;
    const uint16_t *w = dsf_cmp_proj_row(L, oc, C, D) + (size_t)sl * S;
    uint4 cur[SG_CH], nxt[SG_CH];
    pdl_launch();
    load_vecs<SG_CH>(w, 0, S, cur);
    for (int i = threadIdx.x; i < SR * nv; i += blockDim.x) {
        int r = i / nv, u = i % nv;
        float f[8];
        bf16x8(r < nr ? *(const uint4 *)(b.x + (r0 + r) * D + (size_t)sl * S + 8 * u) : make_uint4(0, 0, 0, 0), f);
        *(float4 *)&xs[r][8 * u] = make_float4(f[0], f[1], f[2], f[3]);
        *(float4 *)&xs[r][8 * u + 4] = make_float4(f[4], f[5], f[6], f[7]);
    }
    __syncthreads();
    float acc[SR];
#pragma unroll
    for (int r = 0; r < SR; r++) acc[r] = 0.0f;
    for (int u0 = 0; u0 < nv; u0 += SG_CH) {
        load_vecs<SG_CH>(w, 8 * (u0 + SG_CH), S, nxt);
#pragma unroll
        for (int u = 0; u < SG_CH; u++) {
            if (u0 + u >= nv) break;
            float wf[8];
            bf16x8(cur[u], wf);
#pragma unroll
            for (int r = 0; r < SR; r++) {
                float4 x0 = *(const float4 *)&xs[r][8 * (u0 + u)], x1 = *(const float4 *)&xs[r][8 * (u0 + u) + 4];
                const float x[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
                for (int i = 0; i < 8; i++) acc[r] = DSF_CMP_MADD(x[i], wf[i], acc[r]);
            }
        }
#pragma unroll
        for (int u = 0; u < SG_CH; u++) cur[u] = nxt[u];
    }
    if (o >= O) return;
#pragma unroll
    for (int r = 0; r < SR; r++)
        if (r < nr) part[((int64_t)sl * b.rows + r0 + r) * O + o] = acc[r];
}

#endif
