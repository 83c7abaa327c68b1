#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/chat.h"

void dsf_json_dumps_str(const char *s, size_t n, dsf_tok_buf *out) {
    dsf_tok_buf_put(out, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[8];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20)
            snprintf(u, sizeof u, "\\u%04x", c), esc = u;
        if (!esc) continue;
        dsf_tok_buf_put(out, s + run, i - run);
        dsf_tok_buf_puts(out, esc);
        run = i + 1;
    }
    dsf_tok_buf_put(out, s + run, n - run);
    dsf_tok_buf_put(out, "\"", 1);
}

// Python's float repr: the shortest digits that round-trip, positional for decimal exponents -4..15, else d.ddde+XX.
static void float_repr(double x, dsf_tok_buf *out) {
    if (isnan(x)) {
        dsf_tok_buf_puts(out, "NaN");
        return;
    }
    if (isinf(x)) {
        dsf_tok_buf_puts(out, x < 0 ? "-Infinity" : "Infinity");
        return;
    }
    char buf[64];
    int prec = 0;
    for (prec = 0; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    char digits[32];
    size_t nd = 0;
    const char *p = buf;
    if (*p == '-') dsf_tok_buf_put(out, "-", 1), p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (exp < -4 || exp >= 16) {
        dsf_tok_buf_put(out, digits, 1);
        if (nd > 1) dsf_tok_buf_put(out, ".", 1), dsf_tok_buf_put(out, digits + 1, nd - 1);
        snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
        {
            dsf_tok_buf_puts(out, buf);
            return;
        }
    }
    if (exp < 0) {
        dsf_tok_buf_puts(out, "0.");
        for (int i = 0; i < -exp - 1; i++) dsf_tok_buf_put(out, "0", 1);
        {
            dsf_tok_buf_put(out, digits, nd);
            return;
        }
    }
    for (int i = 0; i <= exp; i++) dsf_tok_buf_put(out, (size_t)i < nd ? digits + i : "0", 1);
    dsf_tok_buf_put(out, ".", 1);
    if ((size_t)exp + 1 < nd)
        dsf_tok_buf_put(out, digits + exp + 1, nd - (size_t)exp - 1);
    else
        dsf_tok_buf_put(out, "0", 1);
}

void dsf_json_dumps(const json_t *v, dsf_tok_buf *out) {
    char buf[32];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *x;
        int first = 1;
        dsf_tok_buf_put(out, "{", 1);
        json_object_foreach((json_t *)v, key, x) {
            if (!first) dsf_tok_buf_put(out, ", ", 2);
            first = 0;
            dsf_json_dumps_str(key, strlen(key), out);
            dsf_tok_buf_put(out, ": ", 2);
            dsf_json_dumps(x, out);
        }
        dsf_tok_buf_put(out, "}", 1);
        break;
    }
    case JSON_ARRAY:
        dsf_tok_buf_put(out, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) dsf_tok_buf_put(out, ", ", 2);
            dsf_json_dumps(json_array_get(v, i), out);
        }
        dsf_tok_buf_put(out, "]", 1);
        break;
    case JSON_STRING: dsf_json_dumps_str(json_string_value(v), json_string_length(v), out); break;
    case JSON_INTEGER:
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        dsf_tok_buf_puts(out, buf);
        break;
    case JSON_REAL: float_repr(json_real_value(v), out); break;
    case JSON_TRUE: dsf_tok_buf_puts(out, "true"); break;
    case JSON_FALSE: dsf_tok_buf_puts(out, "false"); break;
    case JSON_NULL: dsf_tok_buf_puts(out, "null"); break;
    }
}
