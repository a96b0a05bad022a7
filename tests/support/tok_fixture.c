#include "tests/support/tok_fixture.h"

json_t *ps_test_json(const char *text, size_t flags)
{
    json_error_t je;
    json_t *j = json_loads(text, flags, &je);
    if (!j)
        fail_msg("bad test JSON %s: %s", text, je.text);
    return j;
}
