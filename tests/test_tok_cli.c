#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_util.h"
#include "tok_test_util.h"

static const char *bin;

static void test_encode_decode(void) {
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd,
             "%s tokenize --text '<｜User｜>你好<｜Assistant｜><think>推理</think>答案<｜end▁of▁sentence｜>'", bin);
    char *out = test_run_stdout(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && !strcmp(out, "128803,30594,128804,128821,36101,128822,7624,1\n"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "printf '128803,30594\\n' | %s tokenize --decode", bin);
    out = test_run_stdout(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && !strcmp(out, "<｜User｜>你好"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "printf 'hello world' | %s tokenize", bin);
    out = test_run_stdout(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && !strcmp(out, "33310,2058\n"), "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd,
             "echo '[{\"role\":\"user\",\"content\":\"Hi\"}]' | %s tokenize --chat - --variant v4 --mode chat", bin);
    out = test_run_stdout(cmd, &st);
    TEST_ASSERT_MSG(st == 0 && !strcmp(out, "0,128803,23166,128804,128822\n"), "%s", out);
    free(out);
}

static void test_errors(void) {
    char cmd[1024];
    int st;
    snprintf(cmd, sizeof cmd, "%s tokenize --tokenizer /nonexistent.json --text x 2>&1", bin);
    char *out = test_run_stdout(cmd, &st);
    TEST_ASSERT(st != 0 && strstr(out, "fetch_tokenizer"));
    free(out);
    snprintf(cmd, sizeof cmd, "%s tokenize --decode --text 5,999999 2>&1", bin);
    out = test_run_stdout(cmd, &st);
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
