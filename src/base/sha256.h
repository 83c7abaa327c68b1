#ifndef DSF_SHA256_H
#define DSF_SHA256_H
// SHA-256 over OpenSSL's EVP interface: an incremental context for streamed files, a one-shot call and hex output.
#include <stddef.h>
#include <stdint.h>

typedef struct dsf_sha256_ctx dsf_sha256_ctx;

dsf_sha256_ctx *dsf_sha256_new(void);
void dsf_sha256_update(dsf_sha256_ctx *s, const void *bytes, size_t n);
// Writes the 32-byte digest and frees the context.
void dsf_sha256_final(dsf_sha256_ctx *s, uint8_t digest[32]);
// Frees a context without producing a digest (an abandoned stream); NULL is allowed.
void dsf_sha256_free(dsf_sha256_ctx *s);
void dsf_sha256(const void *bytes, size_t n, uint8_t digest[32]);
// Writes 64 lowercase hex digits and a terminating NUL.
void dsf_sha256_hex(const uint8_t digest[32], char hex[65]);

#endif
