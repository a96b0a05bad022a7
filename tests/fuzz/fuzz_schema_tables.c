/*
 * Spider-format tables JSON (ps_schemas_add_tables_json, what --schema
 * files go through) on hostile bytes. When it accepts them, every schema
 * must hold the invariants the rest of the layer relies on: db_ids sorted
 * and unique, no sqlite_* table, every column's table and every key's
 * columns in range. Then each schema goes through both serializations, the
 * shortening order and the in-memory SQLite database the SQL check makes
 * from it (which must always be creatable: odd names, duplicates, tables
 * without columns and hostile types included).
 */
#include "schema/sql_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* An error's message is always NUL-terminated within its buffer. */
#define FUZZ_CHECK_ERROR(rc, err)                                                              \
    do {                                                                                       \
        if ((rc) < 0 && strnlen((err).message, sizeof (err).message) >= sizeof (err).message) \
            abort();                                                                           \
    } while (0)

static void check_schema(const ps_schema *d, ps_sql_checker *k)
{
    for (size_t t = 0; t < d->n_tables; t++)
        if (!strncasecmp(d->tables[t], "sqlite_", 7))
            abort();
    for (size_t c = 0; c < d->n_columns; c++)
        if (d->columns[c].table >= d->n_tables || !d->columns[c].name || !d->columns[c].type)
            abort();
    for (size_t f = 0; f < d->n_fks; f++)
        if (d->fks[f].column >= d->n_columns || d->fks[f].ref_column >= d->n_columns)
            abort();
    ps_buf b;
    ps_buf_init(&b);
    if (ps_schema_serialize(d, PS_SCHEMA_PICARD, NULL, &b) ||
        ps_schema_serialize(d, PS_SCHEMA_DDL, NULL, &b))
        abort();
    ps_buf_free(&b);
    ps_shorten_unit *u = calloc(d->n_tables + d->n_columns + 1, sizeof *u);
    unsigned char *gt = calloc(d->n_tables + 1, 1), *gc = calloc(d->n_columns + 1, 1);
    size_t n = 0;
    /* the first table's name as SQL names it: quoted ("stadi.um" is one
     * name, stadi.um two), its own double quotes doubled */
    const char *name = d->n_tables ? d->tables[0] : "SELECT 1";
    ps_buf quoted;
    ps_buf_init(&quoted);
    bool oom = ps_buf_putc(&quoted, '"') != 0;
    for (const char *c = name; *c && !oom; c++)
        oom = ps_buf_putc(&quoted, *c) || (*c == '"' && ps_buf_putc(&quoted, '"'));
    oom = oom || ps_buf_putc(&quoted, '"');
    const char *sql = d->n_tables ? quoted.data : name;
    size_t sql_len = d->n_tables ? quoted.len : strlen(name);
    ps_select_scratch x = {0};
    ps_select_text q = {name, strlen(name)};
    if (oom || !u || !gt || !gc || ps_schema_gold(d, sql, sql_len, gt, gc) ||
        (d->n_tables && !gt[0]) || ps_schema_rank(&x, d, &q, 1, u, &n) ||
        n > d->n_tables + d->n_columns)
        abort();
    ps_schema_mask_keep(&x, d, u, n, gt, gc); /* everything: every table kept */
    for (size_t t = 0; t < d->n_tables; t++)
        if (!gt[t])
            abort();
    ps_select_scratch_free(&x);
    ps_buf_free(&quoted);
    free(u);
    free(gt);
    free(gc);
    ps_sql_class cls;
    char msg[128];
    ps_error err = {0};
    int rc = ps_sql_compile(k, d, "SELECT 1", 8, &cls, msg, sizeof msg, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc != 0 && rc != PS_ENOMEM) { /* the schema's database could not be made */
        fprintf(stderr, "%s\n", err.message);
        abort();
    }
    if (rc == 0 && cls != PS_SQL_OK)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_schemas *s = NULL;
    ps_error err = {0};
    if (ps_schemas_create(&s, &err))
        return 0;
    int rc = ps_schemas_add_tables_json(s, (const char *)data, size, "fuzz.json", &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc < 0 && rc != PS_EFORMAT && rc != PS_EUSAGE && rc != PS_ENOMEM)
        abort();
    ps_sql_checker *k = NULL;
    if (rc == 0 && ps_sql_checker_create(s, &k, &err) == 0) {
        for (size_t i = 0; i < ps_schemas_count(s); i++) {
            const ps_schema *d = ps_schemas_at(s, i);
            if (i && strcmp(ps_schemas_at(s, i - 1)->db_id, d->db_id) >= 0)
                abort();
            if (ps_schemas_find(s, d->db_id, strlen(d->db_id)) != d)
                abort();
            check_schema(d, k);
        }
        char hex[65];
        ps_schemas_get_digest(s, hex);
        if (strlen(hex) != 64)
            abort();
        ps_sql_checker_free(k);
    }
    ps_schemas_free(s);
    return 0;
}
