#ifndef DSF_DEVICE_H
#define DSF_DEVICE_H
// Backend memory for the contract runner: host memory on CPU, device memory and one stream on CUDA.
#include <stddef.h>

#include "base/err.h"
#include "contract/contract.h"

#ifdef __cplusplus
extern "C" {
#endif

// 1 when the backend can run here; otherwise 0 and a one-line reason in why.
int dsf_dev_available(dsf_backend b, char *why, size_t n);
// A short description of the device (GPU name, compute capability, driver) for reports.
void dsf_dev_describe(dsf_backend b, char *out, size_t n);
int dsf_dev_alloc(dsf_backend b, size_t n, void **out, dsf_err *e);
void dsf_dev_free(dsf_backend b, void *p);
int dsf_dev_upload(dsf_backend b, void *dst, const void *src, size_t n, dsf_err *e);
int dsf_dev_download(dsf_backend b, void *dst, const void *src, size_t n, dsf_err *e);
int dsf_dev_fill(dsf_backend b, void *dst, int byte, size_t n, dsf_err *e);
// Waits for the stream and reports any asynchronous error.
int dsf_dev_sync(dsf_backend b, void *stream, dsf_err *e);
int dsf_dev_stream(dsf_backend b, void **stream, dsf_err *e);
void dsf_dev_stream_free(dsf_backend b, void *stream);
// The compute capability of the present GPU as 10*major+minor, or 0.
int dsf_dev_cuda_cc(void);

#ifdef __cplusplus
}
#endif

#endif
