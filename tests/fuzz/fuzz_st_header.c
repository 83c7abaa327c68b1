// libFuzzer target: the input is a whole safetensors file; the header parser and the mmap open path must never crash.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "io/st_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// A header that parses must describe tensors that tile the data section exactly, in offset order.
static void check_header(const dsf_st_header *h, uint64_t data_size) {
    uint64_t at = 0;
    for (size_t i = 0; i < h->count; i++) {
        const dsf_tensor *t = &h->tensors[i];
        if (h->begin[i] != at || (uint64_t)dsf_tensor_numel(t) * dsf_dtype_size(t->dtype) != t->nbytes) abort();
        at += t->nbytes;
    }
    if (at != data_size) abort();
}

static void parse_header(const uint8_t *data, size_t size) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | data[i];
    size_t len = n < size - 8 ? (size_t)n : size - 8;
    dsf_st_header *h = NULL;
    dsf_err e;
    if (dsf_st_header_parse((const char *)data + 8, len, size - 8 - len, "fuzz", &h, &e) == 0) {
        check_header(h, size - 8 - len);
        dsf_st_header_free(h);
    } else if (h || !strstr(e.msg, "fuzz")) {
        abort();
    }
}

static void open_file(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz_st", MFD_CLOEXEC);
    if (fd < 0) return;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        dsf_st *st = NULL;
        dsf_err e;
        if (dsf_st_open(path, &st, &e) == 0) {
            volatile uint8_t sink = 0;
            for (size_t i = 0; i < dsf_st_count(st); i++) {
                const dsf_tensor *t = dsf_st_at(st, i);
                if (dsf_st_find(st, t->name) != t) abort();
                if (t->nbytes) sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->nbytes - 1];
            }
            (void)sink;
            dsf_st_close(st);
        } else if (st || !strstr(e.msg, path)) {
            abort();
        }
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size >= 8) parse_header(data, size);
    open_file(data, size);
    return 0;
}
