/* jansson reports a file it could not open at line -1, column -1; printed
 * as a position that gave messages such as "manifest.json:-1: unable to
 * open manifest.json: ...". Out of memory it reports at line -1 too, with
 * an empty text where the allocation that failed was not its own error
 * message's: printed as such, "gpt2.tokenizer.json:-1:-1: " said nothing. */
#include "common/json_where.h"
#include "common/ps_internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* jansson's allocations go through a wrapper that counts, per thread, the
 * ones that failed; it calls the functions set before it (malloc unless a
 * host program set its own), so memory stays paired with its free. It is
 * installed when the library is loaded, before any thread of ours can be
 * inside jansson (jansson reads the functions without a lock). */
static _Thread_local unsigned long alloc_failures;
static json_malloc_t next_malloc;

static void *counting_malloc(size_t n)
{
    void *p = next_malloc(n);
    if (!p)
        alloc_failures++;
    return p;
}

__attribute__((constructor)) static void install_counting(void)
{
    json_free_t f;
    json_get_alloc_funcs(&next_malloc, &f);
    json_set_alloc_funcs(counting_malloc, f);
}

json_t *ps_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *je)
{
    unsigned long before = alloc_failures;
    json_t *j = json_loadb(buf, len, flags, je);
    if (alloc_failures == before)
        return j;
    json_decref(j);
    je->line = je->column = -1;
    je->position = 0;
    je->text[0] = 0; /* read as out of memory below */
    je->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_out_of_memory;
    return NULL;
}

static bool out_of_memory(const json_error_t *je)
{
    return json_error_code(je) == json_error_out_of_memory || (je->line < 1 && !je->text[0]);
}

const char *ps_json_where(char *buf, size_t n, const char *path, const json_error_t *je)
{
    if (out_of_memory(je))
        snprintf(buf, n, "%s: out of memory parsing the JSON", path);
    else if (je->line >= 1 && je->column >= 1)
        snprintf(buf, n, "%s:%d:%d: %s", path, je->line, je->column, je->text);
    else if (je->line >= 1)
        snprintf(buf, n, "%s:%d: %s", path, je->line, je->text);
    else if (strstr(je->text, path))
        snprintf(buf, n, "%s", je->text);
    else
        snprintf(buf, n, "%s: %s", path, je->text);
    return buf;
}

int ps_json_load_error(ps_error *err, const char *path, const json_error_t *je)
{
    char why[PS_ERROR_MESSAGE_MAX];
    return ps_error_set(err, out_of_memory(je) ? PS_ENOMEM : PS_EFORMAT, "%s",
                        ps_json_where(why, sizeof why, path, je));
}
