#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/runner.h"

// One finding per line: "kernel gate backend reason", gate 1..4 or "limits"; '#' starts a comment line.
typedef struct finding {
    char kernel[96];
    int gate;
    dsf_backend backend;
} finding;

extern const char dsf_known_findings_text[];

struct dsf_known {
    finding *f;
    int n;
};

int dsf_known_parse(const char *text, const char *origin, dsf_known **out, dsf_err *e) {
    dsf_known *k = dsf_calloc(1, sizeof *k);
    *out = k;
    int ln = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        p += len + (nl ? 1 : 0);
        ln++;
        char *s = line;
        while (isspace((unsigned char)*s)) s++;
        if (!*s || *s == '#') continue;
        char kern[96], gate[16], be[16], reason[2];
        if (sscanf(s, "%95s %15s %15s %1s", kern, gate, be, reason) != 4)
            return dsf_fail(e, "%s:%d: expected 'kernel gate backend reason'", origin, ln);
        finding f = {{0}, 0, DSF_BACKEND_CPU};
        snprintf(f.kernel, sizeof f.kernel, "%s", kern);
        f.gate = !strcmp(gate, "limits") ? 5 : atoi(gate);
        if (f.gate < 1 || f.gate > 5) return dsf_fail(e, "%s:%d: gate '%s' is not 1, 2, 3, 4 or limits", origin, ln, gate);
        if (!strcmp(be, "cuda"))
            f.backend = DSF_BACKEND_CUDA;
        else if (strcmp(be, "cpu"))
            return dsf_fail(e, "%s:%d: backend '%s' is not cpu or cuda", origin, ln, be);
        k->f = dsf_realloc(k->f, sizeof *k->f * (size_t)(k->n + 1));
        k->f[k->n++] = f;
    }
    return 0;
}

int dsf_known_load(const char *path, dsf_known **out, dsf_err *e) {
    *out = NULL;
    if (!path) return dsf_known_parse(dsf_known_findings_text, "known_findings.txt (built in)", out, e);
    FILE *fp = fopen(path, "rb");
    if (!fp) return dsf_fail(e, "%s: cannot open the known-findings file", path);
    size_t cap = 4096, n = 0, got;
    char *buf = dsf_malloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, fp)) > 0)
        if ((n += got) + 1 >= cap) buf = dsf_realloc(buf, cap *= 2);
    fclose(fp);
    buf[n] = 0;
    int rc = dsf_known_parse(buf, path, out, e);
    free(buf);
    return rc;
}

void dsf_known_free(dsf_known *k) {
    if (!k) return;
    free(k->f);
    free(k);
}

int dsf_known_has(const dsf_known *k, const char *kernel, int gate, dsf_backend b) {
    for (int i = 0; k && i < k->n; i++)
        if (k->f[i].gate == gate && k->f[i].backend == b && !strcmp(k->f[i].kernel, kernel)) return 1;
    return 0;
}

void dsf_known_apply(const dsf_known *k, dsf_kernel_result *r) {
    r->failed = 0;
    r->fixed_findings = 0;
    for (int g = 1; g <= 5; g++) {
        int listed = dsf_known_has(k, r->rec->name, g, r->backend);
        r->known[g] = listed && r->red[g];
        if (listed && !r->red[g]) r->fixed_findings++;
        if (r->red[g] && !listed) r->failed = 1;
    }
}
