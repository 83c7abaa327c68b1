// The CPU forward against the float64 reference (tools/ref): 300 + 50 greedy tokens, teacher-forced per layer.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/sample.h"
#include "model/model.h"
#include "test.h"

enum { PROMPT = 300, DECODE = 50, SEQ = PROMPT + DECODE };

// Relative to the reference's rms, one teacher-forced block a layer; why so wide: docs/forward.md (act_quant flips).
static const double HIDDEN_RMS = 0.12, HIDDEN_MAX = 2.5, LOGITS_RMS = 1e-2, LOGITS_MAX = 5e-2;

static const char *PY =
    "import sys, json, numpy as np\n"
    "root, model, d, L, hc, D, V, first = sys.argv[1:9]\n"
    "L, hc, D, V, first = int(L), int(hc), int(D), int(V), int(first)\n"
    "sys.path.insert(0, root + '/tools/ref')\n"
    "import v41_ref, ref_engram\n"
    "from ref_mhc import hc_pre\n"
    "from ref_io import rms_norm\n"
    "mult = None\n"
    "ids = np.fromfile(d + '/ids.i32', dtype=np.int32).astype(np.int64)\n"
    "T = ids.size\n"
    "hid = np.fromfile(d + '/hidden.f32', dtype=np.float32).reshape(L + 1, T, hc, D).astype(np.float64)\n"
    "pm = np.fromfile(d + '/premix.f32', dtype=np.float32).reshape(L + 1, T, hc).astype(np.float64)\n"
    "lg = np.fromfile(d + '/logits.f32', dtype=np.float32).reshape(-1, V).astype(np.float64)\n"
    "def rel(c, r):\n"
    "    s = np.sqrt(np.mean(r * r))\n"
    "    return np.sqrt(np.mean((c - r) ** 2)) / s, np.max(np.abs(c - r)) / s\n"
    "tmap = d + '/token_map.txt'\n"
    "m = v41_ref.Model(model, tmap, mult)\n"
    "st = m.new_state()\n"
    "st.hist = m.token_map[ids]\n"
    "st.attn.call = {}\n"
    "pos = np.arange(T)\n"
    "for l in range(L):\n"
    "    h = hid[l]\n"
    "    if l in m.engram:\n"
    "        rows = ref_engram.hash_rows(st.hist, pos, m.engram[l], m.cfg.engram_max_ngram, m.cfg.engram_heads, "
    "m.pad)\n"
    "        h = ref_engram.engram_forward(h, rows, m.wts, 'layers.%d.engram' % l, m.cfg)\n"
    "    out, pre = m.block(l, h, pm[l], pos, st, {})\n"
    "    print('hidden %d %.6e %.6e' % ((l,) + rel(hid[l + 1], out)))\n"
    "y = rms_norm(hc_pre(hid[L][first:], pm[L][first:]), m.wts.w('norm.weight'), m.cfg.eps)\n"
    "ref = m.logits(y)\n"
    "print('logits %.6e %.6e' % rel(lg, ref))\n"
    "for i in range(lg.shape[0]):\n"
    "    a, b = int(np.argmax(lg[i])), int(np.argmax(ref[i]))\n"
    "    if a != b: print('argmax %d %d %d %.6e' % (i, a, b, (ref[i][b] - ref[i][a]) / np.sqrt(np.mean(ref[i] ** "
    "2))))\n"
    "free = v41_ref.reference(model, ids, None, tmap, mult)\n"
    "print('free-running: last layer %.3e, logits %.3e (rms relative; informational)' % (rel(hid[L], free['hidden'][L "
    "- 1])[0], rel(lg, free['logits'][first:])[0]))\n";

static char g_root[4096], g_dir[64];

static void find_root(void) {
    snprintf(g_root, sizeof g_root, "%s", __FILE__);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(g_root, '/');
        if (slash) *slash = '\0';
    }
}

static int write_file(const char *name, const void *p, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) || w != n ? -1 : 0;
}

// The model's Engram token map in the dsfold-engram-map text format, for the reference's --token-map.
static int write_token_map(const dsf_model *m) {
    int64_t n, distinct = 0;
    const char *source;
    const int32_t *ids = dsf_model_token_map(m, &n, &source);
    char path[256];
    snprintf(path, sizeof path, "%s/token_map.txt", g_dir);
    FILE *f = fopen(path, "w");
    if (!f || !ids) return -1;
    for (int64_t i = 0; i < n; i++) distinct = ids[i] >= distinct ? ids[i] + 1 : distinct;
    fprintf(f, "dsfold-engram-map 1\n%lld %lld\n", (long long)n, (long long)distinct);
    for (int64_t i = 0; i < n; i++) fprintf(f, "%d\n", (int)ids[i]);
    printf("Engram token map: %s, %lld entries, %lld compressed ids\n", source, (long long)n, (long long)distinct);
    return fclose(f) ? -1 : 0;
}

static void test_against_reference(void) {
    dsf_err e;
    dsf_model *m;
    char path[256];
    snprintf(path, sizeof path, "%s/model", g_dir);
    TEST_ASSERT(dsf_model_open(path, 2, &m, &e) == 0);
    const dsf_args *a = dsf_model_args(m);
    int64_t V = a->vocab_size, HD = (int64_t)a->hc_mult * a->dim, L = a->n_layers;
    int32_t ids[SEQ];
    for (int i = 0; i < PROMPT; i++) ids[i] = (int32_t)(dsf_sample_uniform(11, i, 0) * (double)V) % V;
    float *lg = malloc(sizeof(float) * (size_t)((DECODE + 1) * V));
    dsf_stream *s;
    TEST_ASSERT(dsf_stream_new(m, SEQ, 0, &s, &e) == 0);
    dsf_round_part p = {s, 0, PROMPT, ids, DSF_LOGITS_LAST, lg};
    dsf_round r = {1, &p, NULL, NULL};
    for (int i = 0; i < DECODE; i++) {
        TEST_ASSERT(dsf_model_forward(m, &r, &e) == 0);
        ids[PROMPT + i] = dsf_sample(lg, V, 0.0f, 0, PROMPT + i);
        p = (dsf_round_part){s, PROMPT + i, 1, &ids[PROMPT + i], DSF_LOGITS_LAST, lg};
    }
    dsf_stream_free(s);
    float *hid = malloc(sizeof(float) * (size_t)((L + 1) * SEQ * HD)), *all = malloc(sizeof(float) * (size_t)(SEQ * V));
    float *pm = malloc(sizeof(float) * (size_t)((L + 1) * SEQ * a->hc_mult));
    TEST_ASSERT(dsf_stream_new(m, SEQ, 0, &s, &e) == 0);
    p = (dsf_round_part){s, 0, SEQ, ids, DSF_LOGITS_ALL, all};
    r.hidden = hid;
    r.pre_mix = pm;
    TEST_ASSERT(dsf_model_forward(m, &r, &e) == 0);
    for (int i = 0; i < DECODE; i++) TEST_ASSERT(dsf_sample(all + (PROMPT - 1 + i) * V, V, 0, 0, 0) == ids[PROMPT + i]);
    TEST_ASSERT(write_file("ids.i32", ids, sizeof ids) == 0);
    TEST_ASSERT(write_file("hidden.f32", hid, sizeof(float) * (size_t)((L + 1) * SEQ * HD)) == 0);
    TEST_ASSERT(write_file("premix.f32", pm, sizeof(float) * (size_t)((L + 1) * SEQ * a->hc_mult)) == 0);
    TEST_ASSERT(write_file("logits.f32", all + (PROMPT - 1) * V, sizeof(float) * (size_t)((DECODE + 1) * V)) == 0);
    TEST_ASSERT(write_file("cmp.py", PY, strlen(PY)) == 0);
    TEST_ASSERT(write_token_map(m) == 0);
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "python3 %s/cmp.py '%s' %s/model %s %lld %d %d %lld %d", g_dir, g_root, g_dir, g_dir,
             (long long)L, a->hc_mult, a->dim, (long long)V, PROMPT - 1);
    FILE *f = popen(cmd, "r");
    TEST_ASSERT(f != NULL);
    char line[256];
    int n_hidden = 0, n_logits = 0, n_argmax = 0;
    while (f && fgets(line, sizeof line, f)) {
        int l, i, c, rr;
        double er, em;
        fputs(line, stdout);
        if (sscanf(line, "hidden %d %lf %lf", &l, &er, &em) == 3) {
            n_hidden++;
            TEST_ASSERT_MSG(er <= HIDDEN_RMS && em <= HIDDEN_MAX, "layer %d: rms %.3e max %.3e", l, er, em);
        } else if (sscanf(line, "logits %lf %lf", &er, &em) == 2) {
            n_logits++;
            TEST_ASSERT_MSG(er <= LOGITS_RMS && em <= LOGITS_MAX, "logits: rms %.3e max %.3e", er, em);
        } else if (sscanf(line, "argmax %d %d %d %lf", &i, &c, &rr, &er) == 4) {
            n_argmax++;
            TEST_ASSERT_MSG(0, "row %d: greedy token %d, the reference's %d (ahead by %.3e)", i, c, rr, er);
        }
    }
    TEST_ASSERT(f && pclose(f) == 0);
    TEST_ASSERT(n_hidden == L && n_logits == 1);
    printf("greedy tokens: %d of %d differ from the reference's argmax\n", n_argmax, DECODE + 1);
    free(lg);
    free(hid);
    free(pm);
    free(all);
    dsf_stream_free(s);
    dsf_model_close(m);
}

int main(void) {
    find_root();
    const char *bin = getenv("DSF_BIN");
    if (!bin) TEST_SKIP_ALL("DSF_BIN not set (ctest sets it)");
    if (system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) TEST_SKIP_ALL("python3 with NumPy is not available");
    char ref[4200];
    snprintf(ref, sizeof ref, "%s/tools/ref/v41_ref.py", g_root);
    FILE *rf = fopen(ref, "r");
    if (!rf) TEST_SKIP_ALL("tools/ref/v41_ref.py is missing");
    fclose(rf);
    snprintf(g_dir, sizeof g_dir, "/tmp/dsf_test_model_ref_XXXXXX");
    if (!mkdtemp(g_dir)) TEST_SKIP_ALL("mkdtemp failed");
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "'%s' synth --arch v4.1 --size tiny --quiet %s/model > /dev/null", bin, g_dir);
    if (system(cmd) != 0) return 1;
    TEST_RUN(test_against_reference);
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    TEST_END();
}
