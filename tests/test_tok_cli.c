#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "tok_test_util.h"

static const char *bin;

// Runs the shell command and returns its stdout (caller frees) and exit status.
static char *run(const char *cmd, int *status) {
    FILE *p = popen(cmd, "r");
    dsf_tok_buf out = {0};
    char chunk[4096];
    size_t k;
    while (p && (k = fread(chunk, 1, sizeof chunk, p)) > 0) dsf_tok_buf_put(&out, chunk, k);
    dsf_tok_buf_put(&out, "", 0);
    *status = p ? pclose(p) : -1;
    return out.p;
}

static void test_encode_decode(void) {
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd,
             "%s tokenize --text '<｜User｜>你好<｜Assistant｜><think>推理</think>答案<｜end▁of▁sentence｜>'", bin);
    char *out = run(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && !strcmp(out, "128803,30594,128804,128821,36101,128822,7624,1\n"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "printf '128803,30594\\n' | %s tokenize --decode", bin);
    out = run(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && !strcmp(out, "<｜User｜>你好"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "printf 'hello world' | %s tokenize", bin);
    out = run(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && !strcmp(out, "33310,2058\n"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "echo '[{\"role\":\"user\",\"content\":\"Hi\"}]' | %s tokenize --chat - --variant v4 --mode chat", bin);
    out = run(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && !strcmp(out, "0,128803,23166,128804,128822\n"), "%s", out);
    free(out);
}

static void test_errors(void) {
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd, "%s tokenize --tokenizer /nonexistent.json --text x 2>&1", bin);
    char *out = run(cmd, &st);
    TEST_ASSERT(st != 0 && strstr(out, "fetch_tokenizer"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s tokenize --decode --text 5,999999 2>&1", bin);
    out = run(cmd, &st);
    TEST_ASSERT(st != 0 && strstr(out, "999999"));
    free(out);
}

int main(void) {
    bin = getenv("DSF_BIN");
    if (!bin) TEST_SKIP_ALL("DSF_BIN is not set (ctest sets it to the dsfold binary)");
    dsf_tok *tok = tok_test_open();
    if (!tok) TEST_SKIP_ALL("tokenizer.json is absent (run tools/fetch_tokenizer)");
    dsf_tok_close(tok);
    TEST_RUN(test_encode_decode);
    TEST_RUN(test_errors);
    TEST_END();
}
