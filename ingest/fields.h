/* ingest/fields.h — field extraction from raw records (JSON and CSV/TSV). */
#ifndef PS_INGEST_FIELDS_H
#define PS_INGEST_FIELDS_H

#include "ingest/ingest.h"

#include <jansson.h>

/* One field's candidate names, from a comma-separated option
 * ("SQL,query"): the first one a record has (and that is not null) wins. */
#define PS_FIELD_CANDIDATES 8
/* The default sql's names: "sql", "query", "SQL" (BIRD). */
#define PS_DEFAULT_SQL_NAMES 3
typedef struct ps_field_spec {
    const char *cand[PS_FIELD_CANDIDATES];
    size_t n;         /* 0 only for the default sql: "sql", then "query" */
    const char *text; /* as given, for messages ("sql' or 'query" by default) */
} ps_field_spec;

/* Fields a template names ({evidence}): at most this many per template. */
#define PS_EXTRA_FIELDS 16

typedef struct ps_field_names {
    ps_field_spec question, sql, label, id;
    /* Read only with schemas or a template (db.n == 0: not read): the
     * record's database, and the template's {NAME} fields, each one name
     * (a literal key, or a dotted path in JSON). */
    ps_field_spec db;
    const char *extra[PS_EXTRA_FIELDS];
    size_t n_extra;
    /* The record's own difficulty (--difficulty-field; n == 0: not read):
     * a string, number or boolean, as text. */
    ps_field_spec difficulty;
} ps_field_names;

/* Splits `text` (a writable copy the spec then points into) at commas into
 * the spec's candidates; `shown` is what messages call the field. Returns 0,
 * or -1 when a name is empty or there are more than PS_FIELD_CANDIDATES. */
int ps_field_spec_parse(ps_field_spec *s, char *text, const char *shown);

/* Bits of ps_fields.present: a candidate of the field exists in the record
 * (even null). */
enum { PS_HAS_QUESTION = 1, PS_HAS_SQL = 2, PS_HAS_LABEL = 4, PS_HAS_ID = 8 };

/* The fields of one record. Zero-initialise before first use. Pointers are
 * into the record, `root` or the stores, and stay valid until the next
 * extraction or ps_fields_clear. label and id are NUL-terminated. */
typedef struct ps_fields {
    const char *question, *sql, *label, *id; /* label/id NULL when absent */
    size_t question_len, sql_len, label_len, id_len;
    const char *reason; /* set when the record is rejected */
    char detail[512];
    unsigned present;   /* PS_HAS_* (JSON objects and CSV rows) */
    bool examined;      /* the record was an object or a row: present is valid */
    json_t *root;       /* jansson's tree when the fast path deferred */
    ps_buf scratch;     /* fast path: unescaped strings */
    ps_buf label_store, id_store; /* NUL-terminated label and id */
    /* names->db and names->extra: NULL when absent or null */
    const char *db;
    size_t db_len;
    const char *extra[PS_EXTRA_FIELDS];
    size_t extra_len[PS_EXTRA_FIELDS];
    ps_buf extra_store[PS_EXTRA_FIELDS]; /* numbers and booleans as text */
    /* names->difficulty: NUL-terminated, NULL when absent, null, empty or
     * not a scalar */
    const char *difficulty;
    ps_buf difficulty_store;
} ps_fields;


/* Returns 0 with the fields set, or 1 with reason/detail set. */
int ps_fields_from_json(ps_fields *f, const char *data, size_t len, const ps_field_names *names);
/* The top-level keys of the JSON object data[0..len) (or of f->root when
 * set), NUL-separated, into `out` (reset first). 0, or -1 when the record
 * is not an object. */
int ps_fields_json_keys(ps_fields *f, const char *data, size_t len, ps_buf *out);
/* Resolves the header; returns 0, or -1 with a message when the question
 * or sql column is missing. */
int ps_fields_map_columns(ps_column_map *m, const char *const *cols, size_t ncols,
                          const ps_field_names *names, char *detail, size_t dsz);
int ps_fields_from_row(ps_fields *f, const char *const *vals, const size_t *lens, size_t n,
                       size_t ncols, const ps_column_map *m);
/* The member `name` of obj: the literal key first, then as a dotted path
 * ("meta.label"); NULL when absent. */
json_t *ps_fields_lookup(json_t *obj, const char *name);
/* The fields of one turn of a dialogue: question and sql from the turn
 * object (names->question / names->sql name the turn's members), label and
 * id from the dialogue object `root` (which f takes a reference to, as
 * f->root). Returns 0, or 1 with reason/detail set. */
int ps_fields_from_turn(ps_fields *f, json_t *root, json_t *turn, const ps_field_names *names);
/* What messages call the JSON value v's type: "an object", "a string", ...,
 * "null" (also for NULL). */
const char *ps_fields_type_name(json_t *v);
/* Forgets the last record (keeps the buffers). */
void ps_fields_clear(ps_fields *f);
/* Frees everything; f may then be reused after zeroing. */
void ps_fields_free(ps_fields *f);

#endif
