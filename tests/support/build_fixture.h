/* The build tests' fixture (tests/support/build_fixture.c): a build of one
 * input with the tests' vocabulary, for the tests that run ps_build_run
 * with settings of their own (ps_test_build in testutil.h runs one with
 * fixed ones, through this). */
#ifndef PS_TEST_BUILD_FIXTURE_H
#define PS_TEST_BUILD_FIXTURE_H

#include "tests/support/testutil.h"
#include "pipeline/build.h"

/* A build of one input into `out` with the tests' vocabulary: cfg set to
 * the defaults (ps_build_config_init), then its input, output, the
 * bert-base-uncased tokenizer (loaded) and that vocabulary's path. The
 * caller sets what its test varies, runs cfg, and frees the rest with
 * ps_test_bert_build_free. cfg points into the struct: it stays put. */
typedef struct ps_test_bert_build {
    ps_build_config cfg;
    const char *inputs[1];
    char *input, *vocab; /* copies: ps_test_data reuses its buffer */
    ps_tokenizer *tok;
} ps_test_bert_build;

void ps_test_bert_build_init(ps_test_bert_build *b, const char *in, const char *out);
void ps_test_bert_build_free(ps_test_bert_build *b);

#endif
