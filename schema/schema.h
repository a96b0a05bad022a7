/*
 * schema/schema.h — internal interfaces of the text-to-SQL input layer:
 * database schemas, their serializations, templates, and SQL checked
 * against a schema with SQLite. Below ingest (which renders and checks each
 * record while cleaning it) and above common only.
 *
 *   tables.c      Spider-format tables.json → ps_schema
 *   databases.c   DIR/<db_id>/<db_id>.sqlite → ps_schema (read-only)
 *   schemas.c     the set: lookup by db_id, digest
 *   serialize.c   {schema:picard}, {schema:ddl}
 *   select.c      schema selection: what a too-long prompt keeps
 *   shorten.c     the tables and columns a gold SQL uses (gold recall)
 *   hardness.c    a gold SQL's hardness class (Spider's eval_hardness)
 *   compile.c     sqlite3_prepare_v2 against an in-memory copy of a schema
 *   execute.c     running a query read-only with a time limit
 *   template.c    presets, template files, rendering
 */
#ifndef PS_SCHEMA_SCHEMA_H
#define PS_SCHEMA_SCHEMA_H

#include "common/ps_internal.h"
#include "pairshard/schema.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- one database's schema ------------------------------------------------ */

typedef struct ps_schema_column {
    char *name;      /* as the SQL writes it (column_names_original) */
    char *type;      /* "text", "number", ... as the source gives it; may be "" */
    uint32_t table;  /* index into tables */
    bool primary;    /* part of its table's primary key */
    char *examples;  /* with a .sqlite file: up to 3 distinct values as SQL
                        literals ("'France', 'US'"), else NULL (values.c) */
    char *natural;   /* Spider's natural-language name ("column_names":
                        "song name" for Song_Name), or NULL when the source
                        has none; read only by schema selection (select.c) */
} ps_schema_column;

typedef struct ps_schema_fk {
    uint32_t column, ref_column; /* indexes into columns */
} ps_schema_fk;

typedef struct ps_schema {
    char *db_id;
    char **tables;            /* table_names_original, sqlite_* removed */
    char **tables_natural;    /* "table_names" beside them (NULL: none; an
                                 entry may be NULL), as columns[].natural */
    size_t n_tables;
    ps_schema_column *columns; /* in source order, grouped by nothing; no "*" */
    size_t n_columns;
    ps_schema_fk *fks;
    size_t n_fks;
    char *origin;             /* the tables file or .sqlite it came from */
    char *db_path;            /* the .sqlite file, or NULL */
} ps_schema;

/* The schema of `db_id` (len bytes, need not be NUL-terminated), or NULL. */
const ps_schema *ps_schemas_find(const ps_schemas *s, const char *db_id, size_t len);
/* The i-th schema in db_id order (i < ps_schemas_count). */
const ps_schema *ps_schemas_at(const ps_schemas *s, size_t i);

/* ---- building the set (schemas.c, tables.c) -------------------------------- */

/* Frees one schema and everything it owns (NULL is a no-op). */
void ps_schema_free(ps_schema *d);
/* Two schemas describe the same database: same db_id, tables, columns
 * (name, type, table, primary) and foreign keys; origin and db_path are
 * not compared. */
bool ps_schema_equal(const ps_schema *a, const ps_schema *b);
/* Adds `d` to the set, keeping db_id order. The set takes `d` over in every
 * case: an identical schema already there frees it and returns 0; a
 * different one frees it and returns PS_EUSAGE naming both origins. */
int ps_schemas_add(ps_schemas *s, ps_schema *d, ps_error *err);
/* ps_schemas_find for the loaders, which may still change a schema (a
 * databases directory gives a tables.json schema its db_path). */
ps_schema *ps_schemas_find_mut(ps_schemas *s, const char *db_id, size_t len);
/* Adds every database of `len` bytes of Spider-format tables JSON (what
 * ps_schemas_load_tables reads from its file); `origin` names it in
 * messages and in each schema's origin. Same errors as the loader, less
 * the file's. Exposed for the fuzz target. */
int ps_schemas_add_tables_json(ps_schemas *s, const char *text, size_t len, const char *origin,
                               ps_error *err);

/* The set as one Spider-format tables.json text (db_id order; malloc'ed,
 * NUL-terminated) that ps_schemas_load_tables reads back to the same
 * digest (schemas_write.c). 0 or PS_ENOMEM. */
int ps_schemas_to_tables_json(const ps_schemas *s, char **out, size_t *len, ps_error *err);

/* ---- serializations (serialize.c) ----------------------------------------- */

typedef enum ps_schema_style {
    PS_SCHEMA_PICARD = 0, /* " | db_id | table : col , col | table : ..." */
    PS_SCHEMA_DDL,        /* CREATE TABLE ... with types and keys */
    PS_SCHEMA_DDL_VALUES  /* the same, each column followed by its example
                             values when the database file gives them */
} ps_schema_style;

/* Which tables and columns a serialization keeps: keep_table[i] and
 * keep_column[j] non-zero. A NULL mask keeps everything. */
typedef struct ps_schema_mask {
    const unsigned char *keep_table;  /* n_tables flags */
    const unsigned char *keep_column; /* n_columns flags */
} ps_schema_mask;

/* Appends the serialization of `s` to `out` (not reset). Exact formats are
 * documented in docs/CLEANING.md. Returns 0 or PS_ENOMEM. Thread-safe. */
int ps_schema_serialize(const ps_schema *s, ps_schema_style style, const ps_schema_mask *mask,
                        ps_buf *out);

/* Appends `name` as an SQL identifier: bare when it is a plain
 * [A-Za-z_][A-Za-z0-9_]* word that is no SQLite keyword (or always quoted
 * when `always`), else in double quotes with '"' doubled. 0 or PS_ENOMEM. */
int ps_sql_put_ident(ps_buf *out, const char *name, bool always);

/* ---- schema selection (select.c) and gold items (shorten.c) ---------------
 * When a rendered prompt is over its budget, the schema keeps the tables
 * and columns the record's inputs (question, evidence, history) name best,
 * never looking at the SQL (select.c's top says how they are ranked). */

typedef struct ps_shorten_unit {
    uint32_t index;  /* a table index, or a column index when is_column */
    bool is_column;
} ps_shorten_unit;

/* One text the ranking reads (question, evidence, an earlier utterance). */
typedef struct ps_select_text {
    const char *text;
    size_t len;
} ps_select_text;

/* Words, folded and singular, NUL-terminated in text (select.c). */
typedef struct ps_select_words {
    ps_buf text;
    struct {
        uint32_t off, len; /* len's top bit: a stop word */
    } *w;
    size_t n, cap;
} ps_select_words;

/* A thread's scratch for ranking (zero-initialise; ps_select_scratch_free). */
typedef struct ps_select_scratch {
    ps_select_words words, pairs, name;
    ps_buf joined;
    int32_t *tscore, *tname, *cscore; /* thousandths; tname: a table's own name's */
    unsigned char *key;         /* n_columns: a primary or foreign key column */
    uint32_t *queue, *parent;   /* n_tables: foreign-key path search */
    size_t cap_t, cap_c;
} ps_select_scratch;

void ps_select_scratch_free(ps_select_scratch *x);

/* Writes into units[] (room for n_tables + n_columns) the tables and
 * non-key columns of `s` in the order a budget keeps them, best first, and
 * their count into *n: a function of `s` and the texts alone. Returns 0 or
 * PS_ENOMEM. Thread-safe with a scratch per thread. */
int ps_schema_rank(ps_select_scratch *x, const ps_schema *s, const ps_select_text *texts,
                   size_t n_texts, ps_shorten_unit *units, size_t *n);

/* Sets keep_table/keep_column (n_tables and n_columns flags) to what
 * keeping the first k units keeps: those tables, those columns' tables,
 * the tables on foreign-key paths between kept tables, and every kept
 * table's key columns. Needs the scratch of the ps_schema_rank call that
 * made `units`. Monotone in k. */
void ps_schema_mask_keep(ps_select_scratch *x, const ps_schema *s, const ps_shorten_unit *units,
                         size_t k, unsigned char *keep_table, unsigned char *keep_column);

/* The tables the gold SQL uses (gold_table, n_tables flags) and the
 * columns of those tables it uses (gold_column, n_columns flags), for
 * measuring schema selection (gold recall; never for choosing). A name is
 * used when it occurs in `sql` as an identifier (bare or quoted,
 * case-insensitive; not inside a string literal). Returns 0 or PS_ENOMEM.
 * Thread-safe. */
int ps_schema_gold(const ps_schema *s, const char *sql, size_t len, unsigned char *gold_table,
                   unsigned char *gold_column);

/* ---- example values (values.c) --------------------------------------------- */

/* Reads up to 3 distinct non-null values of every column of `d` from its
 * file (d->db_path, read-only) into columns[].examples, as SQL literals
 * (text quoted and cut at 40 characters, numbers as SQLite prints them,
 * blobs left out). Only the first 10,000 rows of a table are looked at, so
 * that the values — and every prompt made from them — depend on the file
 * alone, never on time. 0, or PS_EIO/PS_ENOMEM naming the file. */
int ps_schema_read_examples(ps_schema *d, ps_error *err);

/* ---- SQL checks (compile.c, execute.c) ------------------------------------ */

typedef enum ps_sql_class {
    PS_SQL_OK = 0,
    PS_SQL_SYNTAX,          /* "syntax error", "incomplete input", unrecognized token */
    PS_SQL_NO_TABLE,        /* "no such table" */
    PS_SQL_NO_COLUMN,       /* "no such column" */
    PS_SQL_AMBIGUOUS,       /* "ambiguous column name" */
    PS_SQL_NO_FUNCTION,     /* "no such function", "wrong number of arguments" */
    PS_SQL_MULTIPLE,        /* more than one statement */
    PS_SQL_OTHER,           /* anything else SQLite refuses */
    PS_SQL_CLASSES
} ps_sql_class;

/* "ok", "syntax", "no_such_table", "no_such_column", "ambiguous_column",
 * "no_such_function", "multiple_statements", "other". */
const char *ps_sql_class_name(ps_sql_class c);

/* Per-thread SQLite state: one connection per database used, made on
 * first use (an in-memory database created from the schema; the .sqlite
 * file itself, read-only, when the schema came with one). */
typedef struct ps_sql_checker ps_sql_checker;

int ps_sql_checker_create(const ps_schemas *s, ps_sql_checker **out, ps_error *err);
void ps_sql_checker_free(ps_sql_checker *k);

/* Compiles `sql` (sqlite3_prepare_v2; nothing is executed) against `db`.
 * Sets *cls and SQLite's message into msg (msz bytes; "" when ok).
 * Returns 0 (compiled or not: see *cls), or a negative code when the
 * database itself cannot be set up (PS_ENOMEM; PS_EIO: its .sqlite file
 * cannot be opened; PS_EFORMAT: SQLite refuses the schema, which the
 * fuzzed loader never produced), with a message. */
int ps_sql_compile(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                   ps_sql_class *cls, char *msg, size_t msz, ps_error *err);

typedef enum ps_exec_status {
    PS_EXEC_OK = 0,     /* ran, returned at least one row */
    PS_EXEC_EMPTY,      /* ran, no rows */
    PS_EXEC_ERROR,      /* SQLite failed while compiling or running it */
    PS_EXEC_TIMEOUT,    /* stopped at the time limit */
    PS_EXEC_NO_DATABASE /* the schema has no .sqlite file */
} ps_exec_status;

const char *ps_exec_status_name(ps_exec_status s); /* "ok", "empty", ... */

/* Runs `sql` read-only on db->db_path, stopping it after timeout_ms (a
 * progress handler) and counting up to max_rows rows into *rows (0: no
 * limit; stepping stops at max_rows, status ok). */
int ps_sql_execute(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                   unsigned timeout_ms, uint64_t max_rows, ps_exec_status *status,
                   uint64_t *rows, char *msg, size_t msz, ps_error *err);

/* A query's result fingerprint (execute.c): its status, the rows it
 * returned (up to the row limit) and a hash of them. Each row is hashed
 * (XXH64) over a canonical encoding of its values with their SQLite types
 * (docs/REPORT.md, "sql_result_regression"); the row hashes are combined
 * in order when the statement has an ORDER BY at its top level, else as
 * a multiset (a sum of mixed row hashes: row order does not count,
 * duplicates do). status other than ok: rows and hash 0. */
typedef struct ps_exec_result {
    ps_exec_status status;
    uint64_t rows, hash;
} ps_exec_result;

/* ps_sql_execute, with the fingerprint of the rows in *res. */
int ps_sql_execute_fp(ps_sql_checker *k, const ps_schema *db, const char *sql, size_t len,
                      unsigned timeout_ms, uint64_t max_rows, ps_exec_result *res, char *msg,
                      size_t msz, ps_error *err);

/* Whether `sql` has ORDER BY at its top level: outside parentheses,
 * quotes and comments (a subquery's or a window's does not order the
 * result). */
bool ps_sql_top_order_by(const char *sql, size_t len);

/* ---- templates (template.c) ------------------------------------------------ */

/* A record's cleaned fields, as a template reads them. */
typedef struct ps_render_fields {
    const char *question, *sql, *db_id;
    size_t question_len, sql_len, db_id_len;
    const ps_schema *schema;            /* NULL when the run has no schemas */
    const char *const *history;         /* earlier utterances, most recent first */
    const size_t *history_lens;
    size_t n_history;
    /* one per ps_template_info.fields entry, same order; NULL: the record
     * has no such field or it is null */
    const char *const *values;
    const size_t *value_lens;
} ps_render_fields;

/* Renders the prompt and completion (both reset first) of `f`, the schema
 * under `mask` (NULL: whole). *has_completion is false when the template
 * has none (completion is then empty). Returns 0; 1 when the record cannot
 * be rendered (a placeholder's field is absent or null, a schema
 * placeholder without a schema), with a sentence naming it in detail;
 * or PS_ENOMEM. Thread-safe. */
int ps_template_render(const ps_template *t, const ps_render_fields *f,
                       const ps_schema_mask *mask, ps_buf *prompt, ps_buf *completion,
                       bool *has_completion, char *detail, size_t dsz);

/* Whether the prompt holds a {schema:...} placeholder (the build then
 * shortens the schema rather than truncating). */
bool ps_template_uses_schema(const ps_template *t);

/* SQL's lexical runs (shorten.c; hardness.c uses them too). The end of the
 * quoted run opened at sql[i], past its closing `close` (a doubled closing
 * quote is part of it; `]` closes `[`), or len when it never closes
 * (*closed false; closed may be NULL). */
size_t ps_sql_quoted_end(const char *sql, size_t len, size_t i, char close, bool *closed);
/* The end of a `--` (before its newline) or slash-star comment starting at
 * sql[i]; i when none starts there; len when a slash-star one never closes
 * (*closed false; closed may be NULL). */
size_t ps_sql_comment_end(const char *sql, size_t len, size_t i, bool *closed);

/* ---- hardness of a gold query (hardness.c) ----------------------------------
 * Spider's evaluation script's classes (eval_hardness) from its three counts
 * of the outermost query; see hardness.c for what each counts. */
typedef enum ps_sql_hardness {
    PS_HARDNESS_EASY = 0,
    PS_HARDNESS_MEDIUM,
    PS_HARDNESS_HARD,
    PS_HARDNESS_EXTRA,
    PS_HARDNESS_UNCLASSIFIED /* not a query the counts apply to */
} ps_sql_hardness;

typedef struct ps_sql_hardness_counts {
    uint32_t component1, component2, others;
} ps_sql_hardness_counts;

/* "easy", "medium", "hard", "extra", "unclassified"; NULL out of range. */
const char *ps_sql_hardness_name(ps_sql_hardness level);
/* The class of these counts (eval_hardness). */
ps_sql_hardness ps_sql_hardness_of(const ps_sql_hardness_counts *h);
/* Counts `sql` (len bytes) and classifies it: *level, and *counts when not
 * NULL. Text that is no SELECT (or WITH ... SELECT), or has an unclosed
 * quote, comment or parenthesis, is PS_HARDNESS_UNCLASSIFIED. Returns 0 or
 * PS_ENOMEM. Thread-safe. */
int ps_sql_hardness_classify(const char *sql, size_t len, ps_sql_hardness_counts *counts,
                             ps_sql_hardness *level);

#endif /* PS_SCHEMA_SCHEMA_H */
