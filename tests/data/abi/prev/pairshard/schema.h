/*
 * pairshard/schema.h — text-to-SQL inputs: database schemas and templates.
 *
 * A text-to-SQL model reads a question together with the schema of the
 * database it is asked about, and writes SQL for that database. This header
 * gives the two objects that describe that input:
 *
 *   ps_schemas   the schemas of a run's databases, from Spider-format
 *                tables.json files (Spider, CSpider, SParC, CoSQL, BIRD's
 *                dev_tables.json, DuSQL's db_schema.json) and/or from SQLite
 *                files in Spider's layout DIR/<db_id>/<db_id>.sqlite.
 *   ps_template  what the model reads (the prompt) and what it must write
 *                (the completion), rendered from a record's cleaned fields:
 *                a preset ("pair", "question", "picard", "ddl") or a JSON
 *                file {"prompt": "...", "completion": "..."}.
 *
 * A cleaner given both (ps_cleaner_set_schemas, ps_cleaner_set_template in
 * pairshard/clean.h) rejects records whose database is unknown, compiles
 * each record's SQL against its schema before and after cleaning, and hands
 * the rendered prompt and completion to its sink. See docs/CLEANING.md
 * ("Text-to-SQL inputs") for the exact output of every preset.
 *
 * Both objects are immutable once loaded and may be shared by threads.
 */
#ifndef PAIRSHARD_SCHEMA_H
#define PAIRSHARD_SCHEMA_H

#include "pairshard/common.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_schemas ps_schemas;

/* Creates an empty schema set.
 * @param out  receives it (NULL on failure); not NULL.
 * @return 0 or PS_ENOMEM. Free it with ps_schemas_free. */
PS_API int ps_schemas_create(ps_schemas **out, ps_error *err);

/* Frees the set (NULL is a no-op). A cleaner it was given to must be freed
 * first. */
PS_API void ps_schemas_free(ps_schemas *s);

/* Adds every database of a Spider-format tables file: a JSON array of
 *   {"db_id", "table_names_original", "column_names_original": [[table
 *    index, name], ...] (index -1 is Spider's "*"), "column_types",
 *    "primary_keys": [column index or [indexes]], "foreign_keys":
 *    [[column, referenced column], ...]}
 * ("table_names"/"column_names" are used when the _original forms are
 * absent, as in DuSQL). Tables named sqlite_* are SQLite's own and are
 * skipped. A db_id already loaded with the same schema is ignored; with a
 * different one it is an error (two files disagree about a database).
 * @param path  a regular file, at most 256 MiB; plain JSON.
 * @return 0, or (message in err naming the file and, for content errors,
 *         the database and member):
 *   PS_ENOENT   no such file
 *   PS_EIO      unreadable, or not a regular file
 *   PS_EFORMAT  not JSON (line and column), or a database object is
 *               malformed (an index out of range, a member of the wrong type)
 *   PS_EUSAGE   a db_id is defined differently by two files
 *   PS_ELIMIT   larger than 256 MiB
 *   PS_ENOMEM   out of memory */
PS_API int ps_schemas_load_tables(ps_schemas *s, const char *path, ps_error *err);

/* Adds the databases of a directory in Spider's layout,
 * DIR/<db_id>/<db_id>.sqlite, each opened read-only. A database already
 * described by a tables file keeps that schema and gains its file (for
 * execution and sample values); any other gets its schema from the file
 * itself (sqlite_master, PRAGMA table_info and foreign_key_list).
 * Subdirectories without such a file are ignored.
 * @return 0, or PS_ENOENT (no such directory), PS_EIO (unreadable),
 *         PS_EFORMAT (a .sqlite file SQLite cannot read, named),
 *         PS_ENOMEM. */
PS_API int ps_schemas_load_databases(ps_schemas *s, const char *dir, ps_error *err);

/* The number of databases in the set. */
PS_API size_t ps_schemas_count(const ps_schemas *s);

/* SHA-256 (64 lower-case hex digits and a NUL into hex[65]) of a canonical
 * serialization of every schema, in db_id order: the same schemas give the
 * same digest whatever files and order they came from. Never fails. */
PS_API void ps_schemas_get_digest(const ps_schemas *s, char hex[65]);

typedef struct ps_template ps_template;

/* Opens a template: a preset name ("pair", "question", "picard", "ddl")
 * or else the path of a JSON template file
 *   {"prompt": TEXT, "completion": TEXT (optional), "options": {...}}
 * whose TEXT holds placeholders: {question}, {sql}, {db_id},
 * {schema:picard}, {schema:ddl}, {history}, and {NAME} for any top-level
 * field of the raw record ({evidence} for BIRD); "{{" and "}}" are literal
 * braces.
 * @return 0, or PS_ENOENT/PS_EIO (file), PS_EFORMAT (not JSON, or a
 *         placeholder that does not close, named with its offset),
 *         PS_EUSAGE (an unknown preset-like name or member), PS_ENOMEM. */
PS_API int ps_template_open(const char *name_or_path, ps_template **out, ps_error *err);

/* As ps_template_open for a file, from `len` bytes of JSON text; `origin`
 * names it in messages (NULL: "<template>"). */
PS_API int ps_template_parse(const char *json_text, size_t len, const char *origin,
                             ps_template **out, ps_error *err);

PS_API void ps_template_free(ps_template *t);

/* What a template is made of. Pointers belong to the template. */
typedef struct ps_template_info {
    const char *name;         /* the preset's name, or the file's path/origin */
    const char *prompt;       /* the prompt's text, placeholders unexpanded */
    const char *completion;   /* NULL when the template has none */
    int uses_schema;          /* a {schema:...} placeholder: needs ps_schemas */
    int uses_history;         /* {history} */
    size_t n_fields;          /* record fields named by {NAME} placeholders */
    const char *const *fields;
    const char *sha256;       /* of the canonical template text (hex) */
} ps_template_info;

/* Fills *info (not NULL). Never fails. */
PS_API void ps_template_get_info(const ps_template *t, ps_template_info *info);

#ifdef __cplusplus
}
#endif

#endif /* PAIRSHARD_SCHEMA_H */
