/* The build tests' fixture: see build_fixture.h. */
#include "tests/support/build_fixture.h"

#include <stdlib.h>
#include <string.h>

void ps_test_bert_build_init(ps_test_bert_build *b, const char *in, const char *out)
{
    ps_build_config_init(&b->cfg);
    b->input = strdup(in);
    b->vocab = strdup(ps_test_data("vocab/bert-base-uncased.vocab.txt"));
    assert_true(b->input && b->vocab);
    b->inputs[0] = b->input;
    b->tok = ps_test_bert_tokenizer();
    b->cfg.inputs = b->inputs;
    b->cfg.n_inputs = 1;
    b->cfg.out_dir = out;
    b->cfg.tokenizer = b->tok;
    b->cfg.vocab_path = b->vocab;
    b->cfg.vocab_kind = "vocab.txt";
}

void ps_test_bert_build_free(ps_test_bert_build *b)
{
    ps_tokenizer_free(b->tok);
    free(b->input);
    free(b->vocab);
}
