#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/device.h"

int dsf_cuda_available_(char *why, size_t n);
void dsf_cuda_describe_(char *out, size_t n);
int dsf_cuda_alloc_(size_t n, void **out, dsf_err *e);
void dsf_cuda_free_(void *p);
int dsf_cuda_copy_(void *dst, const void *src, size_t n, int to_device, dsf_err *e);
int dsf_cuda_fill_(void *dst, int byte, size_t n, dsf_err *e);
int dsf_cuda_sync_(void *stream, dsf_err *e);
int dsf_cuda_stream_(void **stream, dsf_err *e);
void dsf_cuda_stream_free_(void *stream);
int dsf_cuda_cc_(void);

#ifndef DSF_HAVE_CUDA
int dsf_cuda_available_(char *why, size_t n) {
    snprintf(why, n, "this dsfold was built without CUDA (no nvcc at configure time)");
    return 0;
}
void dsf_cuda_describe_(char *out, size_t n) { snprintf(out, n, "none"); }
int dsf_cuda_alloc_(size_t n, void **out, dsf_err *e) {
    (void)n, (void)out;
    return dsf_fail(e, "CUDA backend not built");
}
void dsf_cuda_free_(void *p) { (void)p; }
int dsf_cuda_copy_(void *dst, const void *src, size_t n, int to_device, dsf_err *e) {
    (void)dst, (void)src, (void)n, (void)to_device;
    return dsf_fail(e, "CUDA backend not built");
}
int dsf_cuda_fill_(void *dst, int byte, size_t n, dsf_err *e) {
    (void)dst, (void)byte, (void)n;
    return dsf_fail(e, "CUDA backend not built");
}
int dsf_cuda_sync_(void *stream, dsf_err *e) {
    (void)stream;
    return dsf_fail(e, "CUDA backend not built");
}
int dsf_cuda_stream_(void **stream, dsf_err *e) {
    (void)stream;
    return dsf_fail(e, "CUDA backend not built");
}
void dsf_cuda_stream_free_(void *stream) { (void)stream; }
int dsf_cuda_cc_(void) { return 0; }
#endif

int dsf_dev_available(dsf_backend b, char *why, size_t n) {
    if (b == DSF_BACKEND_CPU) return 1;
    return dsf_cuda_available_(why, n);
}

void dsf_dev_describe(dsf_backend b, char *out, size_t n) {
    if (b == DSF_BACKEND_CPU)
        snprintf(out, n, "host CPU");
    else
        dsf_cuda_describe_(out, n);
}

int dsf_dev_alloc(dsf_backend b, size_t n, void **out, dsf_err *e) {
    if (b == DSF_BACKEND_CUDA) return dsf_cuda_alloc_(n, out, e);
    *out = malloc(n ? n : 1);
    return *out ? 0 : dsf_fail(e, "out of host memory allocating %zu bytes", n);
}

void dsf_dev_free(dsf_backend b, void *p) {
    if (b == DSF_BACKEND_CUDA)
        dsf_cuda_free_(p);
    else
        free(p);
}

int dsf_dev_upload(dsf_backend b, void *dst, const void *src, size_t n, dsf_err *e) {
    if (b == DSF_BACKEND_CUDA) return dsf_cuda_copy_(dst, src, n, 1, e);
    memcpy(dst, src, n);
    return 0;
}

int dsf_dev_download(dsf_backend b, void *dst, const void *src, size_t n, dsf_err *e) {
    if (b == DSF_BACKEND_CUDA) return dsf_cuda_copy_(dst, src, n, 0, e);
    memcpy(dst, src, n);
    return 0;
}

int dsf_dev_fill(dsf_backend b, void *dst, int byte, size_t n, dsf_err *e) {
    if (b == DSF_BACKEND_CUDA) return dsf_cuda_fill_(dst, byte, n, e);
    memset(dst, byte, n);
    return 0;
}

int dsf_dev_sync(dsf_backend b, void *stream, dsf_err *e) {
    return b == DSF_BACKEND_CUDA ? dsf_cuda_sync_(stream, e) : 0;
}

int dsf_dev_stream(dsf_backend b, void **stream, dsf_err *e) {
    *stream = NULL;
    return b == DSF_BACKEND_CUDA ? dsf_cuda_stream_(stream, e) : 0;
}

void dsf_dev_stream_free(dsf_backend b, void *stream) {
    if (b == DSF_BACKEND_CUDA) dsf_cuda_stream_free_(stream);
}

int dsf_dev_cuda_cc(void) { return dsf_cuda_cc_(); }
