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
