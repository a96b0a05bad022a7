/* Fixtures of the tokenizer.json component tests (tests/support/
 * tok_fixture.c): test JSON parsed or the test fails, and a load context
 * naming "t.json" as the tests' messages expect. */
#ifndef PS_TEST_TOK_FIXTURE_H
#define PS_TEST_TOK_FIXTURE_H

#include "tests/support/testutil.h"

#include "tokenize/hf.h"

/* json_loads(text, flags), failing the test (with the text and jansson's
 * reason) when the test's own JSON does not parse. */
json_t *ps_test_json(const char *text, size_t flags);

/* A JSON value a loader must refuse: its code and whole message. */
typedef struct ps_test_load_case {
    const char *json;
    int code;
    const char *msg; /* NULL: the message starts with the caller's prefix */
} ps_test_load_case;

/* Loads json with the component's loader; asserts it made nothing. */
typedef int (*ps_test_try_load)(const char *json, ps_error *err);

/* Each case through try_load: the code and the message (or, for a NULL
 * msg, the prefix) as the case says. */
void ps_test_load_errors(const ps_test_load_case *cases, size_t n, ps_test_try_load try_load,
                         const char *prefix);

/* A model loader of tokenize/hf.h: ps_tok_model_load, ps_tok_unigram_load... */
typedef int (*ps_test_model_loader)(const ps_tok_load *c, json_t *j, const char *jpath,
                                    ps_tok_model **out);

/* The model of JSON text `json` (at "model" of "t.json"), failing the
 * test (with the text and the message) when it does not load. */
ps_tok_model *ps_test_model(ps_test_model_loader load, const char *json);

/* A ps_test_try_load for a model loader: loads `json` with `load` (at
 * "model" of "t.json") and asserts it made no model; the load's code. */
int ps_test_model_try(ps_test_model_loader load, const char *json, ps_error *err);

#endif
