#include "base/sha256.h"

#include <openssl/evp.h>
#include <stdlib.h>

#include "base/err.h"

struct dsf_sha256_ctx {
    EVP_MD_CTX *ctx;
};

dsf_sha256_ctx *dsf_sha256_new(void) {
    dsf_sha256_ctx *s = dsf_malloc(sizeof *s);
    s->ctx = EVP_MD_CTX_new();
    DSF_ASSERT(s->ctx && EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) == 1);
    return s;
}

void dsf_sha256_update(dsf_sha256_ctx *s, const void *bytes, size_t n) {
    DSF_ASSERT(EVP_DigestUpdate(s->ctx, bytes, n) == 1);
}

void dsf_sha256_final(dsf_sha256_ctx *s, uint8_t digest[32]) {
    unsigned int len = 0;
    DSF_ASSERT(EVP_DigestFinal_ex(s->ctx, digest, &len) == 1 && len == 32);
    dsf_sha256_free(s);
}

void dsf_sha256_free(dsf_sha256_ctx *s) {
    if (!s) return;
    EVP_MD_CTX_free(s->ctx);
    free(s);
}

void dsf_sha256(const void *bytes, size_t n, uint8_t digest[32]) {
    dsf_sha256_ctx *s = dsf_sha256_new();
    dsf_sha256_update(s, bytes, n);
    dsf_sha256_final(s, digest);
}

void dsf_sha256_hex(const uint8_t digest[32], char hex[65]) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[64] = 0;
}
