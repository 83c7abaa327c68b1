#include <stdio.h>
#include <string.h>

#include "tok/tok_internal.h"

// HF tokenizers links Oniguruma 6.9.10 (Unicode 16.0); Debian's may be older, so its \p classes get the newer points.
static void put_ranges(const tok_ucd_class *c, dsf_tok_buf *out) {
    char r[48];
    for (size_t i = 0; i < c->n; i++) {
        int k = snprintf(r, sizeof r, "\\x{%X}-\\x{%X}", (unsigned)c->ranges[i][0], (unsigned)c->ranges[i][1]);
        dsf_tok_buf_put(out, r, (size_t)k);
    }
}

static const tok_ucd_class *find_class(const char *name, size_t n) {
    if (n != 1) return NULL;
    for (const tok_ucd_class *c = dsf_tok_ucd_added; c->name; c++)
        if (c->name == name[0]) return c;
    return NULL;
}

int dsf_tok_regex_patch(const char *pat, size_t n, dsf_tok_buf *out, char *why, size_t why_n) {
    int depth = 0, class_start = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = pat[i];
        if (ch == '\\' && i + 1 < n && (pat[i + 1] == 'p' || pat[i + 1] == 'P') && i + 2 < n && pat[i + 2] == '{') {
            const char *name = pat + i + 3, *close = memchr(name, '}', n - (size_t)(name - pat));
            if (!close) {
                snprintf(why, why_n, "unterminated \\p{ at byte %zu", i);
                return -1;
            }
            size_t len = (size_t)(close - name);
            const tok_ucd_class *c = pat[i + 1] == 'p' ? find_class(name, len) : NULL;
            if (!c) {
                snprintf(why, why_n,
                         "property %.*s at byte %zu: only \\p{L}, \\p{M}, \\p{N}, \\p{P}, \\p{S} are supported",
                         (int)(close + 1 - pat - (ptrdiff_t)i), pat + i, i);
                return -1;
            }
            if (!depth) dsf_tok_buf_put(out, "[", 1);
            dsf_tok_buf_put(out, pat + i, (size_t)(close + 1 - (pat + i)));
            put_ranges(c, out);
            if (!depth) dsf_tok_buf_put(out, "]", 1);
            i = (size_t)(close - pat);
            class_start = 0;
            continue;
        }
        if (ch == '\\' && i + 1 < n) {
            dsf_tok_buf_put(out, pat + i, 2);
            i++;
            class_start = 0;
            continue;
        }
        if (ch == '[') {
            depth++;
            class_start = 1;
        } else if (ch == '^' && class_start) {
            class_start = 1;
            dsf_tok_buf_put(out, &ch, 1);
            continue;
        } else if (ch == ']' && depth && !class_start) {
            depth--;
        } else {
            class_start = 0;
        }
        if (ch != '[') class_start = 0;
        dsf_tok_buf_put(out, &ch, 1);
    }
    return 0;
}
