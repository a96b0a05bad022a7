/* ingest/fields.h — field extraction from raw records (JSON and CSV/TSV). */
#ifndef PS_INGEST_FIELDS_H
#define PS_INGEST_FIELDS_H

#include "ingest/ingest.h"

#include <jansson.h>

typedef struct ps_field_names {
    const char *question, *sql, *label, *id; /* sql NULL: "sql" then "query" */
} ps_field_names;

/* The fields of one record. Zero-initialise before first use. Pointers are
 * into the record, `root` or the stores, and stay valid until the next
 * extraction or ps_fields_clear. label and id are NUL-terminated. */
typedef struct ps_fields {
    const char *question, *sql, *label, *id; /* label/id NULL when absent */
    size_t question_len, sql_len, label_len, id_len;
    const char *reason; /* set when the record is rejected */
    char detail[200];
    json_t *root;       /* jansson's tree when the fast path deferred */
    ps_buf scratch;     /* fast path: unescaped strings */
    ps_buf label_store, id_store; /* NUL-terminated label and id */
} ps_fields;


/* Returns 0 with the fields set, or 1 with reason/detail set. */
int ps_fields_from_json(ps_fields *f, const char *data, size_t len, const ps_field_names *names);
/* Resolves the header; returns 0, or -1 with a message when the question
 * or sql column is missing. */
int ps_fields_map_columns(ps_column_map *m, const char *const *cols, size_t ncols,
                          const ps_field_names *names, char *detail, size_t dsz);
int ps_fields_from_row(ps_fields *f, const char *const *vals, const size_t *lens, size_t n,
                       size_t ncols, const ps_column_map *m);
/* Forgets the last record (keeps the buffers). */
void ps_fields_clear(ps_fields *f);
/* Frees everything; f may then be reused after zeroing. */
void ps_fields_free(ps_fields *f);

#endif
