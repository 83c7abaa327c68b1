// dsfold generate end to end on tiny V4.1: text prompts, streamed text, token_sha, --ids parity, --chat, refusals.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/sample.h"
#include "test.h"
#include "test_util.h"
#include "tok/tok.h"

static const char *bin;
static char g_dir[] = "/tmp/dsf_test_generate_XXXXXX";

// The reply's ids line ("ids 1,2,3") into ids; returns the count, -1 when missing.
static int parse_reply(const char *out, int32_t *ids, int cap, char *sha) {
    const char *l = strstr(out, "ids ");
    const char *s = strstr(out, "token_sha ");
    if (!l || !s || sscanf(s, "token_sha %12s", sha) != 1) return -1;
    int n = 0;
    for (l += 4; *l && *l != '\n' && n < cap; l += *l == ',') ids[n++] = (int32_t)strtol(l, (char **)&l, 10);
    return n;
}

static void test_prompt_and_ids(void) {
    char cmd[1024], sha[16], sha2[16], want[13];
    int st;
    int32_t ids[32], ids2[32];
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'Hello, world' -n 12 2>/dev/null", bin, g_dir);
    char *out = test_run_stdout(cmd, &st);
    int n = parse_reply(out, ids, 32, sha);
    TEST_ASSERT_MSG(st == 0 && n == 12, "%s", out);
    dsf_token_sha(ids, n, want);
    TEST_ASSERT(!strcmp(sha, want));
    // The streamed text is the lossy decode of the reply, then a newline before the ids line.
    char idlist[512] = "", num[16];
    for (int i = 0; i < n; i++) snprintf(num, sizeof num, i ? ",%d" : "%d", ids[i]), strcat(idlist, num);
    snprintf(cmd, sizeof cmd, "%s tokenize --decode --text %s", bin, idlist);
    char *text = test_run_stdout(cmd, &st);
    size_t tn = strlen(text);
    TEST_ASSERT_MSG(st == 0 && tn > 0 && !strncmp(out, text, tn) && !strncmp(out + tn, "\nids ", 5), "%s", out);
    // The same prompt given as ids takes the same path: same reply, same token_sha.
    snprintf(cmd, sizeof cmd, "%s tokenize --text 'Hello, world'", bin);
    char *pids = test_run_stdout(cmd, &st);
    pids[strcspn(pids, "\n")] = 0;
    snprintf(cmd, sizeof cmd, "%s generate --model %s --ids %s -n 12 2>/dev/null", bin, g_dir, pids);
    char *out2 = test_run_stdout(cmd, &st);
    TEST_ASSERT(st == 0 && parse_reply(out2, ids2, 32, sha2) == n && !memcmp(ids, ids2, sizeof(int32_t) * 12));
    TEST_ASSERT(!strcmp(sha, sha2));
    free(out), free(text), free(pids), free(out2);
}

static void test_chat_and_map(void) {
    char cmd[1024], sha[16], sha2[16];
    int st;
    int32_t ids[32];
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'Hello, world' -n 6 2>/dev/null", bin, g_dir);
    char *plain = test_run_stdout(cmd, &st);
    TEST_ASSERT(st == 0 && parse_reply(plain, ids, 32, sha) == 6);
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt 'Hello, world' --chat -n 6 2>/dev/null", bin, g_dir);
    char *chat = test_run_stdout(cmd, &st);
    TEST_ASSERT(st == 0 && parse_reply(chat, ids, 32, sha2) == 6 && strcmp(sha, sha2));
    snprintf(cmd, sizeof cmd, "%s generate --model %s --ids 5,6,7 -n 2 --token-map %s 2>&1 >/dev/null", bin, g_dir,
             dsf_tok_path(NULL));
    char *note = test_run_stdout(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && strstr(note, "Engram token map: ") && strstr(note, "tokenizer.json"), "%s", note);
    free(plain), free(chat), free(note);
}

static void test_refusals(void) {
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd, "%s generate --model %s --prompt x --tokenizer /nonexistent.json 2>&1", bin, g_dir);
    char *out = test_run_stdout(cmd, &st);
    TEST_ASSERT_MSG(st != 0 && strstr(out, "fetch_tokenizer"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "%s generate --model %s --ids 1,2 --chat 2>&1", bin, g_dir);
    out = test_run_stdout(cmd, &st);
    TEST_ASSERT(st != 0 && strstr(out, "usage"));
    free(out);
}

int main(void) {
    bin = getenv("DSF_BIN");
    if (!bin) TEST_SKIP_ALL("DSF_BIN is not set (ctest sets it to the dsfold binary)");
    if (access(dsf_tok_path(NULL), R_OK)) TEST_SKIP_ALL("no tokenizer.json (run tools/fetch_tokenizer)");
    if (!mkdtemp(g_dir)) TEST_SKIP_ALL("mkdtemp failed");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' synth --arch v4.1 --size tiny --quiet %s > /dev/null", bin, g_dir);
    if (system(cmd) != 0) return 1;
    TEST_RUN(test_prompt_and_ids);
    TEST_RUN(test_chat_and_map);
    TEST_RUN(test_refusals);
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    TEST_END();
}
