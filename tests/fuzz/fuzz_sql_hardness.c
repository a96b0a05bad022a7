/*
 * A gold SQL's hardness class (ps_sql_hardness_classify, which every record
 * of a build goes through, before and after cleaning) on hostile bytes:
 * paired parentheses, quotes and comments left open, clauses in any order.
 * Besides memory safety: it never fails but for memory, the class is the
 * one its counts give (or unclassified), and the same bytes give the same
 * answer.
 */
#include "schema/schema.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a copy of exactly `size` bytes: a read past it is ASan's to see */
    char *sql = malloc(size ? size : 1);
    if (!sql)
        return 0;
    memcpy(sql, data, size);
    ps_sql_hardness level, again;
    ps_sql_hardness_counts h, h2;
    int rc = ps_sql_hardness_classify(sql, size, &h, &level);
    if (rc == PS_ENOMEM) {
        free(sql);
        return 0;
    }
    if (rc || !ps_sql_hardness_name(level))
        abort();
    if (level != PS_HARDNESS_UNCLASSIFIED && ps_sql_hardness_of(&h) != level)
        abort();
    if (ps_sql_hardness_classify(sql, size, &h2, &again) || again != level ||
        memcmp(&h, &h2, sizeof h))
        abort();
    free(sql);
    return 0;
}
