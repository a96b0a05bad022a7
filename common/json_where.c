/* jansson reports a file it could not open at line -1, column -1; printed
 * as a position that gave messages such as "manifest.json:-1: unable to
 * open manifest.json: ...". */
#include "common/json_where.h"

#include <stdio.h>
#include <string.h>

const char *ps_json_where(char *buf, size_t n, const char *path, const json_error_t *je)
{
    if (je->line >= 1 && je->column >= 1)
        snprintf(buf, n, "%s:%d:%d: %s", path, je->line, je->column, je->text);
    else if (je->line >= 1)
        snprintf(buf, n, "%s:%d: %s", path, je->line, je->text);
    else if (strstr(je->text, path))
        snprintf(buf, n, "%s", je->text);
    else
        snprintf(buf, n, "%s: %s", path, je->text);
    return buf;
}
