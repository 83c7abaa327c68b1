// The compressor on CUDA: fused decode (GEMV or sliced projection, then emitters), tiled prefill (SGEMM, emit, ring).
#include "kern/compress/compress_emit_warp.cuh"
#include "kern/compress/compress_gemv.cuh"
#include "kern/compress/compress_sgemm.cuh"
#include "kern/compress/compress_sgemv.cuh"
#include "kern/cuda_check.h"

// Counters (arrivals, departures, pooling and key tickets a row); ws, pooled, sliced part, fused keys (scratch_bytes).
enum { CTR_BYTES = 1024, KEY_CTR = 2 + DSF_CMP_FUSED_MAX_ROWS };
static_assert((KEY_CTR + DSF_CMP_FUSED_MAX_ROWS) * 4 <= CTR_BYTES, "every ticket a row fits the counters");

__device__ static unsigned load_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Thread 0 waits for the G projecting blocks' arrivals.
__device__ static void wait_arrivals(unsigned *ctr, unsigned G) {
    while (load_acquire(ctr) < G) __nanosleep(32);
}

// Emitter side of the grid-wide wait: waits where need (else departs at once); the last of ne to depart waits, resets.
__device__ static void wait_projections(unsigned *ctr, unsigned G, unsigned ne, int need) {
    if (threadIdx.x == 0) {
        if (need || ne == 1) wait_arrivals(ctr, G);
        if (ne == 1) ctr[0] = 0; // the only emitter: no departures to count
        else if (atomicAdd(ctr + 1, 1u) == ne - 1) {
            if (!need) wait_arrivals(ctr, G);
            ctr[0] = 0, ctr[1] = 0;
        }
        __threadfence();
    }
    __syncthreads();
}

// Fused decode: G blocks project (FOLD: fold part; STAGE: gemv_staged) and arrive; rows*pc emit; rows*kb share keys.
template <bool FOLD, bool STAGE>
__global__ void __launch_bounds__(256, 2) cmp_fused(dsf_cmp_layer L, dsf_cmp_batch b, float *ws, float *pooled,
                                                    unsigned *ctr, int fault, int wide, int skip, int pc,
                                                    const float *part, int kb, float *keys) {
    __shared__ emit_smem sm;
    extern __shared__ uint4 wst[]; // dynamic: the staged GEMV's weights, [warp][slice][odd stride] 16-byte vectors
    int O = dsf_cmp_proj_outputs_dev(L), C = dsf_cmp_channels_dev(L), D = L.dim, S = D / DSF_CMP_SLICES;
    int nw = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31, o = blockIdx.x * nw + warp;
    int64_t ro = b.rows * O;
    if (FOLD) pdl_wait(); // the sliced path: its projection's grid ends first (launch_p)
    int G = FOLD ? (int)((ro + blockDim.x - 1) / blockDim.x) : (O + nw - 1) / nw, ne = (int)b.rows * pc;
    if ((int)blockIdx.x < G) {
        int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
        if (FOLD && i < ro) {
            float p[DSF_CMP_SLICES];
#pragma unroll
            for (int s = 0; s < DSF_CMP_SLICES; s++) p[s] = __ldcg(part + s * ro + i);
            float tot = p[0];
#pragma unroll
            for (int s = 1; s < DSF_CMP_SLICES; s++)
                if (s < DSF_CMP_SLICES - skip) tot = DSF_CMP_ADD(tot, p[s]);
            store_proj(L, b, ws, O, i / O, (int)(i % O), tot, fault, L.ratio > 1);
        }
        const uint16_t *w = o < O ? dsf_cmp_proj_row(L, o, C, D) + lane * S : NULL;
        for (int64_t t0 = 0; !FOLD && t0 < b.rows; t0 += TCH) {
            int nr = b.rows - t0 < TCH ? (int)(b.rows - t0) : TCH;
            float acc[TCH];
#pragma unroll
            for (int t = 0; t < TCH; t++) acc[t] = 0.0f;
            uint4 *wsw = wst + warp * (gemv_stage_bytes(nw, S) / nw / 16); // this warp's staged weights
            if (STAGE) gemv_staged(b, w ? w - lane * S : NULL, D, S, t0, nr, acc, wsw, sm);
            else gemv_rows(b, w, D, S, t0, nr, acc, sm);
#pragma unroll
            for (int t = 0; t < TCH; t++) sm.u.part[warp][t][lane] = acc[t];
            __syncwarp();
            if (w && lane < nr) {
                float tot = sm.u.part[warp][lane][0];
                for (int s = 1; s < DSF_CMP_SLICES - skip; s++) tot = DSF_CMP_ADD(tot, sm.u.part[warp][lane][s]);
                store_proj(L, b, ws, O, t0 + lane, o, tot, fault, L.ratio > 1);
            }
            __syncwarp();
        }
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) atomicAdd(ctr, 1u);
        return;
    }
    int me = (int)blockIdx.x - G, kq = me >= ne ? (me - ne) % kb : -1; // kq >= 0: key block kq of its row
    int64_t row = kq >= 0 ? (me - ne) / kb : me / pc;
    int s = seg_of(b, row), cw = L.d / pc, c0 = (me % pc) * cw, per = kb ? (L.ik + kb - 1) / kb : 0;
    int oa = kq >= 0 ? kq * per : 0, ob = kq >= 0 ? min(oa + per, L.ik) : L.ik; // the key outputs it may compute
    int64_t j = emitted_at(L, b, s, b.pos[s] + (row - b.row0[s]), fault);
    int staged = 0, lanes = 0;
    if (j >= 0) {
        emit_tokens(L, b, s, j, ws, O, fault, sm);
        emit_prep(L, b, s, j, wide, sm);
        lanes = pc == 1 && L.ratio > 1 && sm.n <= 8; // a thread a channel, every token's loads at once
        if (L.ratio > 1 && !lanes) {
            pool_stage(C, c0, pool_chunk(sm.n) < cw ? pool_chunk(sm.n) : cw, wide, 0, sm);
            staged = 1;
        }
        for (int i = oa * L.d + threadIdx.x * 64; pc == 1 && (kq >= 0 || !kb) && i < ob * L.d; i += blockDim.x * 64)
            asm volatile("prefetch.global.L1 [%0];" : : "l"(L.w.wk + i));
    }
    wait_projections(ctr, (unsigned)G, (unsigned)(ne + b.rows * kb), j >= 0);
    if (j < 0) return;
    float *dst = pooled + row * L.d; // pc 1: c0 = 0 and cw = d, the whole entry pooled straight into sm.v
    if (lanes) {
        for (int c = threadIdx.x; c < L.d; c += 2 * blockDim.x) { // ratio 2 (2 tokens), ratio 4 with overlap (4 or 8)
            float v[2];
            int nt = blockDim.x, n = sm.n;
            if (n <= 2) pool_lane<2, 2>(sm.tok, n, C, c, nt, L.d, wide, v);
            else pool_lane<8, 2>(sm.tok, n, C, c, nt, L.d, wide, v);
            sm.v[c] = dsf_bf16_round(v[0]);
            if (c + nt < L.d) sm.v[c + nt] = dsf_bf16_round(v[1]);
        }
        __syncthreads();
    } else {
        pool_range(L, c0, c0 + cw, wide, pc == 1 ? sm.v : dst + c0, staged, sm);
    }
    if (pc > 1) {
        if (!last_of(ctr + 2 + row, pc, sm)) return;
        for (int c = threadIdx.x; c < L.d; c += blockDim.x) sm.v[c] = __ldcg(dst + c);
        __syncthreads();
    }
    if (kq < 0) emit_entry(L, fault, sm);
    else emit_latent(L, sm);
    if (!L.ik || (kq < 0 && kb)) return; // no key, or key blocks compute it
    row_key(L.w.wk, L.d, L.ik, L.eps, fault, oa, ob, kq >= 0 ? kb : 0, ctr + KEY_CTR + row, keys + row * L.ik, sm);
}

// Prefill pooling, block (s, e, g): channels [g cg, (g + 1) cg) of its entry into pooled[row]; same bits per channel.
__global__ void __launch_bounds__(256) cmp_pool(dsf_cmp_layer L, dsf_cmp_batch b, const float *ws, float *pooled,
                                                int fault, int wide, int cg) {
    __shared__ emit_smem sm;
    int64_t j, row;
    int c0 = (int)blockIdx.z * cg, c1 = c0 + cg < L.d ? c0 + cg : L.d;
    if (c0 >= c1 || !prefill_entry_at(L, b, fault, blockIdx.x, blockIdx.y, &j, &row)) return;
    emit_tokens(L, b, blockIdx.x, j, ws, dsf_cmp_proj_outputs_dev(L), fault, sm);
    pool_range(L, c0, c1, wide, pooled + row * L.d + c0, 0, sm);
}

enum { RING_PER = 4, RING_THREADS = 256 }; // cmp_ring_rows: values a thread copies (loads before stores), threads

// Prefill ring rows, block (s, i, z): part z of row i of segment s's last cap rows, after the emissions read the ring.
__global__ void cmp_ring_rows(dsf_cmp_layer L, dsf_cmp_batch b, const float *__restrict__ ws) {
    int s = blockIdx.x, C2 = 2 * dsf_cmp_channels_dev(L), c0 = blockIdx.z * blockDim.x * RING_PER + threadIdx.x;
    int64_t row = (int64_t)b.row0[s + 1] - L.cap + (int64_t)blockIdx.y;
    if (row < b.row0[s]) return;
    int64_t p = b.pos[s] + (row - b.row0[s]);
    float v[RING_PER], *dst = b.ring[s] + (size_t)(p & (L.cap - 1)) * C2;
#pragma unroll
    for (int k = 0; k < RING_PER; k++) v[k] = c0 + k * (int)blockDim.x < C2 ? ws[row * C2 + c0 + k * blockDim.x] : 0.0f;
#pragma unroll
    for (int k = 0; k < RING_PER; k++)
        if (c0 + k * (int)blockDim.x < C2) dst[c0 + k * blockDim.x] = v[k];
}

__global__ void cmp_ring_reset(float *ring, int cap, int C) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (int64_t)cap * 2 * C; i += (int64_t)gridDim.x * blockDim.x)
        ring[i] = (i / C) % 2 ? -INFINITY : 0.0f;
}

// Rows of pooled channels the scratch holds: the fused path's emitters of up to DSF_CMP_FUSED_MAX_ROWS rows, or all.
static size_t pooled_rows(int64_t rows) { return rows > DSF_CMP_FUSED_MAX_ROWS ? (size_t)rows : DSF_CMP_FUSED_MAX_ROWS; }

// Counters; ws [rows, O]; pooled [max(rows, 64), d]; up to 64 rows: slice chains [32][rows][O] and keys [rows, ik].
extern "C" size_t dsf_cmp_scratch_bytes(const dsf_cmp_layer *L, int64_t rows) {
    size_t r = (size_t)(rows > 0 ? rows : 1), pr = pooled_rows((int64_t)r);
    size_t sr = r < DSF_CMP_FUSED_MAX_ROWS ? r : DSF_CMP_FUSED_MAX_ROWS, O = (size_t)dsf_cmp_proj_outputs(L);
    return CTR_BYTES + sizeof(float) * (r * O + pr * (size_t)L->d + sr * (DSF_CMP_SLICES * O + (size_t)L->ik));
}

static int geom_check(const dsf_geom *g, dsf_err *e) {
    if (g->threads < 64 || g->threads > 256 || g->threads % 32 || g->dyn_smem < 0 || g->p[0] < 0 || g->p[0] > 3 ||
        g->p[1] < 0 || g->p[1] > 3 || g->p[2] < 0 || g->p[2] > EW || g->p[3] < 0 || g->p[3] > DSF_CMP_FUSED_MAX_ROWS ||
        g->p[4] < 0 || g->p[4] > DSF_CMP_KEY_BLOCKS_MAX)
        return dsf_fail(e,
                        "compressor cuda geometry %s: threads %d (64..256, multiple of 32), path %d, tile %d "
                        "(0..3), entries a block %d (0..%d), sliced GEMV rows %d (0..%d), key blocks %d (0..%d)",
                        g->name, g->threads, g->p[0], g->p[1], g->p[2], (int)EW, g->p[3], DSF_CMP_FUSED_MAX_ROWS,
                        g->p[4], DSF_CMP_KEY_BLOCKS_MAX);
    return 0;
}

// Tiles: 0 32x64, 1 64x64 (K tiles of 16 where slices allow, else 8), 2 128x128 double-buffered (prefill only).
static const void *gemm_fn(int tile, int kt16, int sliced) {
    if (tile == 2 && !sliced) return kt16 ? (const void *)cmp_gemm_db<128, 16> : (const void *)cmp_gemm_db<128, 8>;
    tile = tile ? 1 : 0;
    if (sliced && tile) return kt16 ? (const void *)cmp_gemm<64, 64, 16, 1> : (const void *)cmp_gemm<64, 64, 8, 1>;
    if (tile) return kt16 ? (const void *)cmp_gemm<64, 64, 16, 0> : (const void *)cmp_gemm<64, 64, 8, 0>;
    return sliced ? (const void *)cmp_gemm<32, 64, 8, 1> : (const void *)cmp_gemm<32, 64, 8, 0>;
}

// The GEMM tile's rows (tiles 0 and 1 also their threads, a thread's 8x8 outputs over 64 columns), threads, columns.
static int gemm_rows(int tile) { return tile == 2 ? 128 : tile ? 64 : 32; }
static int gemm_threads(int tile) { return tile == 2 ? 256 : gemm_rows(tile); }
static int gemm_cols(int tile) { return tile == 2 ? 128 : 64; }

// The prefill SGEMM's dynamic memory: a double-buffered tile's own, or more where a tiled geometry declares it.
static int gemm_smem(const dsf_geom *g, int tile, int kt16) {
    int own = tile == 2 ? gemm_db_smem(128, kt16 ? 16 : 8) : 0, decl = g->p[0] == 2 ? g->dyn_smem : 0;
    return own > decl ? own : decl;
}

// The sliced SGEMM's tile: 0 (32 rows) on the automatic geometry up to 32 rows, else 1 where p[1] names a larger one.
static int sliced_tile(const dsf_geom *g, int64_t rows) { return g->p[0] == 0 && rows <= 32 ? 0 : g->p[1] ? 1 : 0; }

// The largest prefill tile a geometry can launch: tile 3 picks 2 or 1 (gemm_tile).
static int tile_max(const dsf_geom *g) { return g->p[1] == 3 ? 2 : g->p[1]; }

// Tile 3 picks by grid: 2 where its blocks give every SM 1.5 or more, else 1 (whose 4x more blocks spread further).
static int gemm_tile(int tile, int O, int64_t rows, dsf_err *e) {
    int dev = 0, sms = 0;
    if (tile != 3) return tile;
    if (dsf_cuda_sms(&dev, &sms, "compressor", e)) return -1;
    int64_t blocks = (int64_t)((O + 127) / 128) * ((rows + 127) / 128);
    return 2 * blocks >= 3 * (int64_t)sms ? 2 : 1;
}

extern "C" int dsf_cmp_cuda_prefill_tile(const dsf_geom *g, const dsf_cmp_layer *L, int64_t rows, dsf_err *e) {
    return geom_check(g, e) ? -1 : gemm_tile(g->p[1], dsf_cmp_proj_outputs(L), rows, e);
}

// Blocks of cmp_fused the device holds at once: the fewest of its three instances, each at the memory it launches with.
static int fused_slots(int threads, int smem, int *slots, dsf_err *e) {
    const void *fns[] = {(const void *)cmp_fused<0, 0>, (const void *)cmp_fused<1, 0>, (const void *)cmp_fused<0, 1>};
    for (int f = 0; f < 3; f++) {
        int s = 0;
        if (dsf_cuda_slots(fns[f], threads, f == 2 ? smem : 0, "cmp_fused", &s, e)) return -1;
        *slots = f == 0 || s < *slots ? s : *slots;
    }
    return 0;
}

// One launch; pdl: a later kernel of the call, launched early on sm_90 on (pdl_wait holds its blocks; see pdl_launch).
static int launch_p(const void *fn, dim3 grid, int threads, int smem, void *stream, void **args, const char *what,
                    int pdl, dsf_err *e) {
    if (dsf_cuda_smem_limit(fn, smem, what, e)) return -1;
    int early = pdl ? dsf_cuda_pdl_ok(fn, e) : 0;
    if (early < 0) return -1;
    if (!early) {
        DSF_CUDA_TRY(e, cudaLaunchKernel(fn, grid, dim3((unsigned)threads), args, (size_t)smem, (cudaStream_t)stream));
    } else {
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cf = {grid, dim3((unsigned)threads), (size_t)smem, (cudaStream_t)stream, at, 1};
        DSF_CUDA_TRY(e, cudaLaunchKernelExC(&cf, fn, args));
    }
    DSF_CUDA_LAUNCHED(e, what);
    return 0;
}

static int launch(const void *fn, dim3 grid, int threads, int smem, void *stream, void **args, const char *what,
                  dsf_err *e) {
    return launch_p(fn, grid, threads, smem, stream, args, what, 0, e);
}

extern "C" int dsf_cmp_run_cuda_v(void *stream, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b,
                                  void *scratch, size_t scratch_bytes, int fault, dsf_err *e) {
    if (dsf_cmp_batch_check(L, b, e) || geom_check(g, e)) return -1;
    if (scratch_bytes < dsf_cmp_scratch_bytes(L, b->rows) || (uintptr_t)scratch % 256)
        return dsf_fail(e, "compressor: scratch of %zu bytes at %p, need %zu aligned to 256", scratch_bytes, scratch,
                        dsf_cmp_scratch_bytes(L, b->rows));
    if ((uintptr_t)b->x % 16 || (uintptr_t)L->w.wkv % 16 || (uintptr_t)L->w.wgate % 16)
        return dsf_fail(e, "compressor: x and projection weights must be 16-byte aligned");
    if (b->rows == 0 || b->n_seg == 0) return 0;
    if (b->rows > 0x7FFFFFFF) return dsf_fail(e, "compressor: %lld rows", (long long)b->rows);
    dsf_cmp_layer l = *L;
    dsf_cmp_batch bb = *b;
    unsigned *counter = (unsigned *)scratch;
    float *ws = (float *)((char *)scratch + CTR_BYTES);
    int wide = fault == DSF_CMP_GEOM && g->threads >= 256, skip = fault == DSF_CMP_BATCH && b->n_seg > DSF_CMP_SUITE_MAX_SEG;
    int O = dsf_cmp_proj_outputs(L), span = (L->overlap ? 2 : 1) * L->ratio;
    int fused = g->p[0] != 2 && b->rows <= DSF_CMP_FUSED_MAX_ROWS && (L->ratio == 1 || b->max_len <= L->cap - span);
    int slots = 0, pc = span >= 64 ? 16 : 1;
    // The geometry's dynamic memory stages the GEMV's weights: forced fused always, else for slices of whole lines.
    int S = L->dim / DSF_CMP_SLICES, sb = gemv_stage_bytes(g->threads / 32, S);
    int stage = sb && g->dyn_smem >= sb && (g->p[0] == 1 || S % 64 == 0);
    if (fused && fused_slots(g->threads, stage ? sb : 0, &slots, e)) return -1;
    while (pc > 1 && (L->d % (32 * pc) || b->rows * pc > slots / 2)) pc /= 2;
    float *pooled = ws + (size_t)b->rows * (size_t)O, *part = NULL;
    int kt16 = L->dim / DSF_CMP_SLICES % 16 == 0; // a slice holds whole K tiles of 16
    if (fused && b->rows <= slots / 2) {
        int opb = g->threads / 32, grid = (O + opb - 1) / opb, ne = (int)b->rows * pc, nt = g->threads;
        // Key blocks a row (p[4], 0 automatic, 1 the emitter alone): as many as leave half the slots to projections.
        int kb = L->ik && pc == 1 ? (g->p[4] ? g->p[4] : DSF_CMP_KEY_BLOCKS) : 0;
        kb = kb < L->ik ? kb : L->ik;
        while (kb > 1 && b->rows * (1 + kb) > slots / 2) kb--;
        kb = kb > 1 ? kb : 0;
        float *chains = pooled + pooled_rows(b->rows) * (size_t)L->d; // the sliced path's part, then the key blocks'
        float *keys = chains + DSF_CMP_SLICES * (size_t)(b->rows * O);
        // Sliced (p[0] 3, or auto from DSF_CMP_SLICED_MIN_ROWS rows): the SGEMM a slice a block, then fold and emit.
        if (g->p[0] == 3 || (g->p[0] == 0 && b->rows >= DSF_CMP_SLICED_MIN_ROWS)) {
            part = chains;
            int tile = sliced_tile(g, b->rows), bm = gemm_rows(tile);
            int gv = (g->p[0] == 0 ? DSF_CMP_SGEMV_ROWS : g->p[3]) >= b->rows && L->dim / DSF_CMP_SLICES <= SG_MAX_S;
            void *gargs[] = {&l, &bb, &ws, &fault, &skip, &part}, *vargs[] = {&l, &bb, &part};
            int rb = gv ? SR : bm; // rows a block
            dim3 gg((unsigned)((O + 63) / 64), (unsigned)((b->rows + rb - 1) / rb), DSF_CMP_SLICES);
            if (gv ? launch((const void *)cmp_sgemv, gg, 64, 0, stream, vargs, "cmp_sgemv", e)
                   : launch(gemm_fn(tile, kt16, 1), gg, bm, 0, stream, gargs, "cmp_gemm", e))
                return -1;
            grid = (int)((b->rows * O + nt - 1) / nt);
        }
        stage = stage && !part;
        const void *fn = part    ? (const void *)cmp_fused<1, 0>
                         : stage ? (const void *)cmp_fused<0, 1>
                                 : (const void *)cmp_fused<0, 0>;
        void *args[] = {&l, &bb, &ws, &pooled, &counter, &fault, &wide, &skip, &pc, &part, &kb, &keys};
        dim3 fg((unsigned)(grid + ne + (int)b->rows * kb));
        return launch_p(fn, fg, nt, stage ? sb : 0, stream, args, "cmp_fused", part != NULL, e);
    }
    if (L->cap > 65535) return dsf_fail(e, "compressor: a ring of %d rows exceeds the grid's y dimension", L->cap);
    // Entries of more staged chunks than one (128 tokens: 32 channels a chunk) are pooled by a block a chunk first.
    unsigned ey = (unsigned)dsf_cmp_entry_slots(L->ratio, b->max_len) + 1;
    int cg = L->ratio == 1 ? L->d : max(pool_chunk(span), 32), groups = (L->d + cg - 1) / cg;
    int split = groups > 1 || span > EW_TOK; // cmp_emit_w's warps hold at most EW_TOK tokens each
    // Entries a block of EW warps (geometry p[2], else by count: up to EW share wk's reads, 4 where there is no key).
    int ew = g->p[2]          ? g->p[2]
             : ey >= 8 * 128 ? (L->ik ? 8 : 4)
             : ey >= 4 * 128 ? 4
             : ey >= 2 * 128 ? 2
                             : 1;
    if ((split ? ey : (ey + ew - 1) / (unsigned)ew) > 65535)
        return dsf_fail(e, "compressor: %u entry slots in one segment exceed the grid's y dimension; split the call", ey);
    int tile = gemm_tile(g->p[1], O, b->rows, e), bm = gemm_rows(tile), bn = gemm_cols(tile);
    if (tile < 0) return -1;
    if ((b->rows + bm - 1) / bm > 65535)
        return dsf_fail(e, "compressor: %lld rows in one call exceed the SGEMM grid's 65535 row tiles of %d; split it",
                        (long long)b->rows, bm);
    void *gargs[] = {&l, &bb, &ws, &fault, &skip, &part};
    dim3 gg((unsigned)((O + bn - 1) / bn), (unsigned)((b->rows + bm - 1) / bm));
    if (launch(gemm_fn(tile, kt16, 0), gg, gemm_threads(tile), gemm_smem(g, tile, kt16), stream, gargs, "cmp_gemm", e))
        return -1;
    void *pargs[] = {&l, &bb, &ws, &pooled, &fault, &wide, &cg};
    if (split && launch((const void *)cmp_pool, dim3((unsigned)b->n_seg, ey, (unsigned)groups), g->threads, 0, stream,
                        pargs, "cmp_pool", e))
        return -1;
    void *eargs[] = {&l, &bb, &ws, &pooled, &fault, &wide, &split, &ew};
    dim3 eg((unsigned)b->n_seg, (ey + ew - 1) / (unsigned)ew);
    if (launch((const void *)cmp_emit_w, eg, 32 * EW, 0, stream, eargs, "cmp_emit_w", e))
        return -1;
    if (L->ratio == 1) return 0;
    void *rargs[] = {&l, &bb, &ws};
    unsigned rz = (unsigned)((2 * dsf_cmp_channels(L) + RING_THREADS * RING_PER - 1) / (RING_THREADS * RING_PER));
    return launch((const void *)cmp_ring_rows, dim3((unsigned)b->n_seg, (unsigned)L->cap, rz), RING_THREADS, 0, stream,
                  rargs, "cmp_ring_rows", e);
}

extern "C" int dsf_cmp_run_cuda(void *stream, const dsf_geom *g, const dsf_cmp_layer *L, const dsf_cmp_batch *b,
                                void *scratch, size_t scratch_bytes, dsf_err *e) {
    return dsf_cmp_run_cuda_v(stream, g, L, b, scratch, scratch_bytes, DSF_CMP_REAL, e);
}

extern "C" int dsf_cmp_ring_reset_cuda(void *stream, const dsf_cmp_layer *L, float *ring, dsf_err *e) {
    int cap = L->cap, C = dsf_cmp_channels(L);
    if (!cap) return 0;
    void *args[] = {&ring, &cap, &C};
    return launch((const void *)cmp_ring_reset, dim3(64), 256, 0, stream, args, "cmp_ring_reset", e);
}

// The function a geometry launches first for calls the fused path can serve (the tiled SGEMM for tiled geometries).
static const void *main_fn(const dsf_geom *g) {
    if (g->p[0] == 2) return gemm_fn(tile_max(g), 1, 0);
    if (g->p[0] == 3) return (const void *)cmp_fused<1, 0>;
    return g->dyn_smem ? (const void *)cmp_fused<0, 1> : (const void *)cmp_fused<0, 0>;
}

extern "C" int dsf_cmp_cuda_attrs(const dsf_geom *g, int fault, dsf_func_attrs *out, dsf_err *e) {
    (void)fault;
    if (geom_check(g, e)) return -1;
    return dsf_cuda_func_attrs(main_fn(g), out, e);
}

// The functions a geometry can launch besides the one dsf_cmp_cuda_attrs reads, each with its block and shared memory.
extern "C" int dsf_cmp_cuda_launches(const dsf_geom *g, int measure, dsf_launch *out, int max, dsf_err *e) {
    if (geom_check(g, e)) return -1;
    int sl = g->p[0] == 0 || g->p[0] == 3, t = tile_max(g), ts = sliced_tile(g, INT64_MAX);
    int t2 = g->p[1] == 3 ? 1 : -1; // tile 3's other choice
    const void *mf = main_fn(g); // checked at g->threads and dyn_smem (dsf_cmp_cuda_attrs); listed if launched above
    // Both GEMM K tiles (sliced or not; auto: 32 rows), the sliced GEMV and fold, pooling, emission, ring rows, reset.
    const struct {
        const char *name;
        const void *fn;
        int threads, smem;
    } all[] = {{"cmp_gemm", gemm_fn(t, 1, 0), gemm_threads(t), gemm_smem(g, t, 1)},
               {"cmp_gemm_kt8", gemm_fn(t, 0, 0), gemm_threads(t), gemm_smem(g, t, 0)},
               {"cmp_gemm_64", t2 < 0 ? NULL : gemm_fn(t2, 1, 0), gemm_threads(t2), gemm_smem(g, t2, 1)},
               {"cmp_gemm_64_kt8", t2 < 0 ? NULL : gemm_fn(t2, 0, 0), gemm_threads(t2), gemm_smem(g, t2, 0)},
               {"cmp_gemm_sliced", sl ? gemm_fn(ts, 1, 1) : NULL, gemm_rows(ts), 0},
               {"cmp_gemm_sliced_kt8", sl ? gemm_fn(ts, 0, 1) : NULL, gemm_rows(ts), 0},
               {"cmp_gemm_sliced_32rows", g->p[0] == 0 ? gemm_fn(sliced_tile(g, 32), 0, 1) : NULL, 32, 0},
               {"cmp_sgemv", g->p[0] == 0 || (g->p[0] == 3 && g->p[3]) ? (const void *)cmp_sgemv : NULL, 64, 0},
               {"cmp_fused_fold", sl ? (const void *)cmp_fused<1, 0> : NULL, g->threads, 0},
               {"cmp_fused_gemv", g->p[0] < 2 ? (const void *)cmp_fused<0, 0> : NULL, g->threads, 0},
               {"cmp_pool", (const void *)cmp_pool, g->threads, 0},
               {"cmp_emit_w", (const void *)cmp_emit_w, 32 * EW, 0},
               {"cmp_ring_rows", (const void *)cmp_ring_rows, RING_THREADS, 0},
               {"cmp_ring_reset", (const void *)cmp_ring_reset, 256, 0}};
    int n = 0;
    for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++) {
        int seen = !all[i].fn || (all[i].fn == mf && all[i].threads <= g->threads && all[i].smem <= g->dyn_smem);
        for (int j = 0; j < i; j++)
            seen |= all[j].fn == all[i].fn && all[j].threads == all[i].threads && all[j].smem == all[i].smem;
        if (seen) continue;
        if (n == max) return dsf_fail(e, "compressor: more than %d launched functions for geometry %s", max, g->name);
        dsf_launch *l = &out[n++];
        *l = (dsf_launch){all[i].name, all[i].threads, all[i].smem, {0, 0, 0, 0}};
        if (measure && dsf_cuda_func_attrs(all[i].fn, &l->fa, e)) return -1;
    }
    return n;
}

// Contract-only state: device copies of the batch arrays and a scratch, grown as cases need (one call at a time).
static void *meta_dev, *scratch_dev;
static size_t meta_cap, scratch_cap;

static int grow(void **p, size_t *cap, size_t need, int zero, dsf_err *e) {
    if (need <= *cap) return 0;
    if (*p) cudaFree(*p);
    *p = NULL;
    *cap = 0;
    DSF_CUDA_TRY(e, cudaMalloc(p, need));
    if (zero) DSF_CUDA_TRY(e, cudaMemset(*p, 0, need));
    *cap = need;
    return 0;
}

extern "C" int dsf_cmp_contract_cuda(void *stream, const dsf_geom *g, const dsf_cmp_layer *L, int n_seg, int64_t len,
                                     const uint16_t *x, const int64_t *pos, const float *ring_in, float *ring_out,
                                     uint16_t *kv, uint16_t *ik, int fault, dsf_err *e) {
    cudaStream_t st = (cudaStream_t)stream;
    int64_t E = dsf_cmp_entry_slots(L->ratio, len);
    size_t rf = dsf_cmp_ring_floats(L), S = (size_t)n_seg;
    size_t bytes = S * (sizeof(int64_t) * 5) + sizeof(int32_t) * (S + 1) + 64;
    char *host = (char *)dsf_calloc(1, bytes);
    int64_t *hpos = (int64_t *)host, *j0 = hpos + S;
    void **ptr = (void **)(j0 + S);
    int32_t *row0 = (int32_t *)(ptr + 3 * S);
    int rc = -1;
    if (grow(&meta_dev, &meta_cap, bytes, 0, e) ||
        grow(&scratch_dev, &scratch_cap, dsf_cmp_scratch_bytes(L, (int64_t)S * len), 1, e))
        goto out;
    if (cudaMemcpyAsync(hpos, pos, sizeof(int64_t) * S, cudaMemcpyDeviceToHost, st) != cudaSuccess ||
        cudaStreamSynchronize(st) != cudaSuccess) {
        dsf_fail(e, "compressor contract: positions could not be read back");
        goto out;
    }
    for (size_t s = 0; s <= S; s++) {
        row0[s] = (int32_t)(s * (size_t)len);
        if (s == S) break;
        j0[s] = hpos[s] / L->ratio;
        ptr[s] = ring_out + s * rf;
        ptr[S + s] = kv + s * (size_t)(E * L->d);
        ptr[2 * S + s] = ik + s * (size_t)(E * L->ik);
    }
    {
        char *dm = (char *)meta_dev;
        dsf_cmp_batch b = {n_seg,
                           (int64_t)S * len,
                           (int)len,
                           x,
                           (const int32_t *)(dm + ((char *)row0 - host)),
                           pos,
                           (float *const *)(dm + ((char *)ptr - host)),
                           (uint16_t *const *)(dm + ((char *)(ptr + S) - host)),
                           (uint16_t *const *)(dm + ((char *)(ptr + 2 * S) - host)),
                           (const int64_t *)(dm + ((char *)j0 - host))};
        if (cudaMemcpyAsync(meta_dev, host, bytes, cudaMemcpyHostToDevice, st) != cudaSuccess ||
            (rf && cudaMemcpyAsync(ring_out, ring_in, sizeof(float) * rf * S, cudaMemcpyDeviceToDevice, st)) ||
            cudaMemsetAsync(kv, 0, 2 * S * (size_t)(E * L->d), st) ||
            (L->ik && cudaMemsetAsync(ik, 0, 2 * S * (size_t)(E * L->ik), st))) {
            dsf_fail(e, "compressor contract: setup copies failed");
            goto out;
        }
        rc = dsf_cmp_run_cuda_v(stream, g, L, &b, scratch_dev, scratch_cap, fault, e);
        if (cudaStreamSynchronize(st) != cudaSuccess && !rc) rc = dsf_fail(e, "compressor contract: sync failed");
    }
out:
    free(host);
    return rc;
}
