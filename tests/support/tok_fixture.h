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

#endif
