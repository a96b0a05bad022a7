#include "tests/support/tok_fixture.h"

#include <string.h>

json_t *ps_test_json(const char *text, size_t flags)
{
    json_error_t je;
    json_t *j = json_loads(text, flags, &je);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, je.text);
    return j;
}

void ps_test_load_errors(const ps_test_load_case *cases, size_t n, ps_test_try_load try_load,
                         const char *prefix)
{
    for (size_t i = 0; i < n; i++) {
        ps_error err = {0};
        assert_int_equal(try_load(cases[i].json, &err), cases[i].code);
        if (cases[i].msg)
            assert_string_equal(err.message, cases[i].msg);
        else
            assert_non_null(strstr(err.message, prefix));
    }
}

/* The load's code, the model in *out; *err cleared first. */
static int model_rc(ps_test_model_loader load, const char *json, ps_tok_model **out,
                    ps_error *err)
{
    json_t *j = ps_test_json(json, 0);
    ps_error_clear(err);
    ps_tok_load c = {.file = "t.json", .err = err};
    int rc = load(&c, j, "model", out);
    json_decref(j);
    return rc;
}

ps_tok_model *ps_test_model(ps_test_model_loader load, const char *json)
{
    ps_tok_model *m = NULL;
    ps_error err;
    int rc = model_rc(load, json, &m, &err);
    if (rc)
        fail_msg("loading %s: %s", json, err.message);
    return m;
}

int ps_test_model_try(ps_test_model_loader load, const char *json, ps_error *err)
{
    ps_tok_model *m = NULL;
    int rc = model_rc(load, json, &m, err);
    assert_null(m);
    return rc;
}
