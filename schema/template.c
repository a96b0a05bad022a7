/*
 * Templates: what a text-to-SQL model reads (the prompt) and writes (the
 * completion), rendered from a record's cleaned fields. A template is a
 * preset (template_presets.c) or a JSON file; both are parsed once into a
 * list of segments (literal text or a placeholder), so rendering a record
 * is a walk over that list with no string scanning.
 */
#include "common/json_where.h"
#include "common/nearest.h"
#include "schema/schema.h"
#include "schema/template_int.h"
#include "common/options.h"

#include <jansson.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ps_template_info's size in 0.2.0, its first published version. */
#define TMPLINFO_SIZE_0_2 PS_SIZE_THROUGH(ps_template_info, sha256)

/* A template file is a few lines of JSON; anything larger is not one. */
#define PS_TEMPLATE_FILE_MAX ((size_t)1 << 20)

typedef enum seg_kind {
    SEG_TEXT = 0,
    SEG_QUESTION,
    SEG_SQL,
    SEG_DB_ID,
    SEG_SCHEMA_PICARD,
    SEG_SCHEMA_DDL,
    SEG_SCHEMA_DDL_VALUES,
    SEG_HISTORY,        /* earlier utterances, most recent first, " | " */
    SEG_HISTORY_PICARD, /* " || " + the above, or nothing without history */
    SEG_HISTORY_DDL,    /* "-- Earlier question: u\n" each, oldest first */
    SEG_FIELD           /* a top-level field of the record: fields[field] */
} seg_kind;

typedef struct seg {
    seg_kind kind;
    size_t off, len; /* SEG_TEXT: bytes of the unescaped text store */
    size_t field;    /* SEG_FIELD */
} seg;

typedef struct part {
    char *src;       /* the text as written, placeholders unexpanded */
    char *text;      /* literal bytes (escapes resolved), SEG_TEXT points here */
    seg *segs;
    size_t n;
} part;

struct ps_template {
    char *name;
    part prompt, completion;
    bool has_completion;
    bool normalize_sql;
    char **fields;
    size_t n_fields;
    char sha256[65];
};

static void part_free(part *p)
{
    free(p->src);
    free(p->text);
    free(p->segs);
}

void ps_template_free(ps_template *t)
{
    if (!t)
        return;
    free(t->name);
    part_free(&t->prompt);
    part_free(&t->completion);
    for (size_t i = 0; i < t->n_fields; i++)
        free(t->fields[i]);
    free(t->fields);
    free(t);
}

static int add_seg(part *p, seg s)
{
    seg *n = realloc(p->segs, (p->n + 1) * sizeof *n);
    if (!n)
        return PS_ENOMEM;
    p->segs = n;
    p->segs[p->n++] = s;
    return 0;
}

/* The index of field `name` (len bytes) in t->fields, added when new:
 * info.fields lists each once, in first-use order. -1 when out of memory. */
static long field_index(ps_template *t, const char *name, size_t len)
{
    for (size_t i = 0; i < t->n_fields; i++)
        if (strlen(t->fields[i]) == len && memcmp(t->fields[i], name, len) == 0)
            return (long)i;
    char **n = realloc(t->fields, (t->n_fields + 1) * sizeof *n);
    if (!n)
        return -1;
    t->fields = n;
    if (!(t->fields[t->n_fields] = strndup(name, len)))
        return -1;
    return (long)t->n_fields++;
}

static bool is(const char *name, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(name, word, len) == 0;
}

/* {schema:STYLE} or {history:STYLE} with a style that is not one: an
 * empty style too, which would otherwise be read as a record field named
 * "schema:" that no record has, rejecting every record. */
static int bad_style(const ps_template *t, const char *what, const char *name, size_t len,
                     size_t at, ps_error *err)
{
    bool schema = name[0] == 's';
    size_t colon = schema ? 7 : 8;
    return ps_error_set(err, PS_EUSAGE, "%s: %s: unknown placeholder {%.*s} at offset %zu%s (%s)",
                        t->name, what, (int)len, name, at,
                        len == colon ? ": no style after the colon" : "",
                        schema ? "schema styles: picard, ddl, ddl_values"
                               : "history styles: picard, ddl, or {history} alone");
}

/* One placeholder's name → a segment. */
static int placeholder(ps_template *t, part *p, const char *what, const char *name, size_t len,
                       size_t at, ps_error *err)
{
    seg s = {0};
    if (is(name, len, "question"))
        s.kind = SEG_QUESTION;
    else if (is(name, len, "sql"))
        s.kind = SEG_SQL;
    else if (is(name, len, "db_id"))
        s.kind = SEG_DB_ID;
    else if (is(name, len, "history"))
        s.kind = SEG_HISTORY;
    else if (is(name, len, "history:picard"))
        s.kind = SEG_HISTORY_PICARD;
    else if (is(name, len, "history:ddl"))
        s.kind = SEG_HISTORY_DDL;
    else if (is(name, len, "schema:picard"))
        s.kind = SEG_SCHEMA_PICARD;
    else if (is(name, len, "schema:ddl"))
        s.kind = SEG_SCHEMA_DDL;
    else if (is(name, len, "schema:ddl_values"))
        s.kind = SEG_SCHEMA_DDL_VALUES;
    else if ((len >= 7 && memcmp(name, "schema:", 7) == 0) ||
             (len >= 8 && memcmp(name, "history:", 8) == 0))
        return bad_style(t, what, name, len, at, err);
    else {
        long i = field_index(t, name, len);
        if (i < 0)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        s.kind = SEG_FIELD;
        s.field = (size_t)i;
    }
    return add_seg(p, s) ? ps_error_set(err, PS_ENOMEM, "out of memory") : 0;
}

/* Closes the literal run text[start..*tn) as a segment. */
static int flush_text(part *p, size_t start, size_t end)
{
    if (end == start)
        return 0;
    seg s = {SEG_TEXT, start, end - start, 0};
    return add_seg(p, s);
}

/* Parses `src` into segments: "{{" and "}}" are literal braces, "{name}" a
 * placeholder; an unclosed or empty placeholder, or a lone "}", is
 * PS_EFORMAT with its byte offset. */
static int parse_part(ps_template *t, part *p, const char *what, const char *src, ps_error *err)
{
    size_t n = strlen(src);
    if (!(p->src = strdup(src)) || !(p->text = malloc(n + 1)))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    size_t tn = 0, start = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = src[i];
        if ((ch == '{' || ch == '}') && i + 1 < n && src[i + 1] == ch) {
            p->text[tn++] = ch;
            i++;
            continue;
        }
        if (ch == '}')
            return ps_error_set(err, PS_EFORMAT,
                                "%s: %s: '}' at offset %zu closes no placeholder (write '}}' "
                                "for a literal brace)",
                                t->name, what, i);
        if (ch != '{') {
            p->text[tn++] = ch;
            continue;
        }
        size_t j = i + 1;
        while (j < n && src[j] != '}' && src[j] != '{')
            j++;
        if (j >= n || src[j] != '}')
            return ps_error_set(err, PS_EFORMAT,
                                "%s: %s: the placeholder at offset %zu does not close (write "
                                "'{{' for a literal brace)",
                                t->name, what, i);
        if (j == i + 1)
            return ps_error_set(err, PS_EFORMAT, "%s: %s: empty placeholder {} at offset %zu",
                                t->name, what, i);
        if (flush_text(p, start, tn))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        int rc = placeholder(t, p, what, src + i + 1, j - i - 1, i, err);
        if (rc)
            return rc;
        start = tn;
        i = j;
    }
    p->text[tn] = '\0';
    return flush_text(p, start, tn) ? ps_error_set(err, PS_ENOMEM, "out of memory") : 0;
}

/* SHA-256 over a canonical form: the preset name (empty for files, so the
 * same file under two paths has one digest), the prompt and completion as
 * written, and the options. */
static void digest(ps_template *t, const char *preset)
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    const char *pieces[] = {"pairshard-template-1", preset ? preset : "", t->prompt.src,
                            t->has_completion ? "completion" : "no completion",
                            t->has_completion ? t->completion.src : "",
                            t->normalize_sql ? "normalize_sql" : ""};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
        sha256_update(&ctx, strlen(pieces[i]) + 1, (const uint8_t *)pieces[i]);
    uint8_t d[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx, sizeof d, d);
    for (size_t i = 0; i < sizeof d; i++)
        snprintf(t->sha256 + 2 * i, 3, "%02x", d[i]);
}

int ps_template_build(const char *name, const char *preset, const char *prompt,
                      const char *completion, bool normalize_sql, ps_template **out,
                      ps_error *err)
{
    *out = NULL;
    ps_template *t = calloc(1, sizeof *t);
    if (!t || !(t->name = strdup(name))) {
        free(t);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    t->normalize_sql = normalize_sql;
    int rc = parse_part(t, &t->prompt, "prompt", prompt, err);
    if (!rc && completion) {
        t->has_completion = true;
        rc = parse_part(t, &t->completion, "completion", completion, err);
    }
    if (rc) {
        ps_template_free(t);
        return rc;
    }
    digest(t, preset);
    *out = t;
    return 0;
}

/* "options": {"normalize_sql": bool}. */
static int parse_options(json_t *opts, const char *origin, bool *normalize_sql, ps_error *err)
{
    if (!json_is_object(opts))
        return ps_error_set(err, PS_EUSAGE, "%s: \"options\" must be an object", origin);
    const char *key;
    json_t *v;
    json_object_foreach(opts, key, v) {
        if (strcmp(key, "normalize_sql") != 0)
            return ps_error_set(err, PS_EUSAGE,
                                "%s: unknown option \"%s\" (known: normalize_sql)", origin, key);
        if (!json_is_boolean(v))
            return ps_error_set(err, PS_EUSAGE, "%s: option \"normalize_sql\" must be true or "
                                "false", origin);
        *normalize_sql = json_is_true(v);
    }
    return 0;
}

static int parse_members(json_t *root, const char *origin, ps_template **out, ps_error *err)
{
    if (!json_is_object(root))
        return ps_error_set(err, PS_EFORMAT, "%s: a template is a JSON object {\"prompt\": ..., "
                            "\"completion\": ...}", origin);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "prompt") && strcmp(key, "completion") && strcmp(key, "options"))
            return ps_error_set(err, PS_EUSAGE, "%s: unknown member \"%s\" (known: prompt, "
                                "completion, options)", origin, key);
    }
    json_t *prompt = json_object_get(root, "prompt");
    json_t *completion = json_object_get(root, "completion");
    json_t *opts = json_object_get(root, "options");
    if (!json_is_string(prompt))
        return ps_error_set(err, PS_EUSAGE, "%s: \"prompt\" must be a string", origin);
    if (completion && !json_is_null(completion) && !json_is_string(completion))
        return ps_error_set(err, PS_EUSAGE, "%s: \"completion\" must be a string", origin);
    bool normalize_sql = false;
    int rc = opts ? parse_options(opts, origin, &normalize_sql, err) : 0;
    if (rc)
        return rc;
    return ps_template_build(origin, NULL, json_string_value(prompt),
                             json_is_string(completion) ? json_string_value(completion) : NULL,
                             normalize_sql, out, err);
}

int ps_template_parse(const char *json_text, size_t len, const char *origin, ps_template **out,
                      ps_error *err)
{
    *out = NULL;
    if (!origin)
        origin = "<template>";
    json_error_t je;
    json_t *root = json_loadb(json_text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        char where[512];
        return ps_error_set(err, PS_EFORMAT, "%s", ps_json_where(where, sizeof where, origin,
                                                                 &je));
    }
    int rc = parse_members(root, origin, out, err);
    json_decref(root);
    return rc;
}

int ps_template_open(const char *name_or_path, ps_template **out, ps_error *err)
{
    return ps_template_open_layout(name_or_path, PS_LAYOUT_PAIR, out, err);
}

int ps_template_open_layout(const char *name_or_path, int layout, ps_template **out,
                            ps_error *err)
{
    *out = NULL;
    int rc = ps_template_preset(name_or_path, layout == PS_LAYOUT_CAUSAL, out, err);
    if (rc <= 0)
        return rc;
    /* Not a preset: a file. A bare word that names no file is more likely
     * a mistyped preset than a missing file. */
    char *text;
    size_t len;
    /* stat, not open: opening a FIFO of that name would wait for a writer
     * (ps_file_read_all below opens without blocking and refuses it). */
    struct stat st;
    if (!strchr(name_or_path, '/') && !strchr(name_or_path, '.') && stat(name_or_path, &st) != 0)
        return ps_error_set(err, PS_EUSAGE, "unknown template '%s' (presets: %s; or the "
                            "path of a JSON template file)", name_or_path,
                            ps_template_preset_names());
    rc = ps_file_read_all(name_or_path, "template file", PS_TEMPLATE_FILE_MAX, &text, &len, err);
    if (rc)
        return rc;
    rc = ps_template_parse(text, len, name_or_path, out, err);
    free(text);
    return rc;
}

static void info_fill(const ps_template *t, ps_template_info *info)
{
    memset(info, 0, sizeof *info);
    info->name = t->name;
    info->prompt = t->prompt.src;
    info->completion = t->has_completion ? t->completion.src : NULL;
    info->uses_schema = ps_template_uses_schema(t);
    for (int k = 0; k < 2; k++) {
        const part *p = k ? &t->completion : &t->prompt;
        for (size_t i = 0; i < p->n; i++)
            info->uses_history |= p->segs[i].kind == SEG_HISTORY ||
                                  p->segs[i].kind == SEG_HISTORY_PICARD ||
                                  p->segs[i].kind == SEG_HISTORY_DDL;
    }
    info->n_fields = t->n_fields;
    info->fields = (const char *const *)t->fields;
    info->sha256 = t->sha256;
}

int ps_template_get_info_size(const ps_template *t, ps_template_info *info, size_t size)
{
    ps_template_info o;
    info_fill(t, &o);
    return ps_struct_out(info, size, &o, sizeof o, TMPLINFO_SIZE_0_2, "ps_template_info", NULL);
}

/* The 0.2.0 entry point (pairshard/common.h, "Structs the library fills"). */
#undef ps_template_get_info
PS_API void ps_template_get_info(const ps_template *t, ps_template_info *info);

void ps_template_get_info(const ps_template *t, ps_template_info *info)
{
    ps_template_get_info_size(t, info, TMPLINFO_SIZE_0_2);
}

bool ps_template_uses_schema(const ps_template *t)
{
    for (int k = 0; k < 2; k++) {
        const part *p = k ? &t->completion : &t->prompt;
        for (size_t i = 0; i < p->n; i++)
            if (p->segs[i].kind == SEG_SCHEMA_PICARD || p->segs[i].kind == SEG_SCHEMA_DDL ||
                p->segs[i].kind == SEG_SCHEMA_DDL_VALUES)
                return true;
    }
    return false;
}

/* ---- rendering ------------------------------------------------------------ */

static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Appends s[0..n) without leading and trailing ASCII whitespace. */
static int put_stripped(ps_buf *out, const char *s, size_t n)
{
    while (n && is_space(*s))
        s++, n--;
    while (n && is_space(s[n - 1]))
        n--;
    return ps_buf_append(out, s, n);
}

/* The schema, serialized and stripped: PICARD's input is
 * question.strip() + " " + serialized_schema.strip(). */
static int put_schema(ps_buf *out, const ps_schema *s, ps_schema_style style,
                      const ps_schema_mask *mask, ps_buf *tmp)
{
    ps_buf_reset(tmp);
    int rc = ps_schema_serialize(s, style, mask, tmp);
    return rc ? rc : put_stripped(out, tmp->data ? tmp->data : "", tmp->len);
}

static int put_history(ps_buf *out, const ps_render_fields *f, const char *lead)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < f->n_history; i++) {
        rc = ps_buf_puts(out, i ? " | " : lead);
        if (!rc)
            rc = put_stripped(out, f->history[i], f->history_lens[i]);
    }
    return rc;
}

/* The ddl preset's history: one SQL comment line per earlier utterance,
 * in the order they were said (f->history is most recent first), so that
 * they read as the conversation before the question line. */
static int put_history_ddl(ps_buf *out, const ps_render_fields *f)
{
    int rc = 0;
    for (size_t i = f->n_history; !rc && i-- > 0;) {
        rc = ps_buf_puts(out, "-- Earlier question: ");
        if (!rc)
            rc = put_stripped(out, f->history[i], f->history_lens[i]);
        if (!rc)
            rc = ps_buf_putc(out, '\n');
    }
    return rc;
}

/* What a segment needs that the record may lack: its name, else NULL. */
static const char *missing(const ps_template *t, const seg *s, const ps_render_fields *f)
{
    switch (s->kind) {
    case SEG_DB_ID:
        return f->db_id ? NULL : "{db_id}";
    case SEG_SCHEMA_PICARD:
        return f->schema ? NULL : "{schema:picard}";
    case SEG_SCHEMA_DDL:
        return f->schema ? NULL : "{schema:ddl}";
    case SEG_SCHEMA_DDL_VALUES:
        return f->schema ? NULL : "{schema:ddl_values}";
    case SEG_FIELD:
        return f->values && f->values[s->field] ? NULL : t->fields[s->field];
    default:
        return NULL;
    }
}

static int render_part(const ps_template *t, const part *p, const ps_render_fields *f,
                       const ps_schema_mask *mask, ps_buf *out, ps_buf *tmp)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < p->n; i++) {
        const seg *s = &p->segs[i];
        switch (s->kind) {
        case SEG_TEXT:
            rc = ps_buf_append(out, p->text + s->off, s->len);
            break;
        case SEG_QUESTION:
            rc = ps_buf_append(out, f->question, f->question_len);
            break;
        case SEG_SQL:
            rc = t->normalize_sql ? ps_sql_normalize_picard(f->sql, f->sql_len, out)
                                  : ps_buf_append(out, f->sql, f->sql_len);
            break;
        case SEG_DB_ID:
            rc = ps_buf_append(out, f->db_id, f->db_id_len);
            break;
        case SEG_SCHEMA_PICARD:
            rc = put_schema(out, f->schema, PS_SCHEMA_PICARD, mask, tmp);
            break;
        case SEG_SCHEMA_DDL:
            rc = put_schema(out, f->schema, PS_SCHEMA_DDL, mask, tmp);
            break;
        case SEG_SCHEMA_DDL_VALUES:
            rc = put_schema(out, f->schema, PS_SCHEMA_DDL_VALUES, mask, tmp);
            break;
        case SEG_HISTORY:
            rc = put_history(out, f, "");
            break;
        case SEG_HISTORY_PICARD:
            rc = put_history(out, f, " || ");
            break;
        case SEG_HISTORY_DDL:
            rc = put_history_ddl(out, f);
            break;
        case SEG_FIELD:
            rc = ps_buf_append(out, f->values[s->field], f->value_lens[s->field]);
            break;
        }
    }
    return rc;
}

/* A {NAME} the record lacks, with the placeholder it may be a misspelling
 * of ({questoin}: did you mean {question}?). */
static void field_missing(const char *name, char *detail, size_t dsz)
{
    static const char *const known[] = {"question",       "sql",           "db_id",
                                        "history",        "history:picard", "history:ddl",
                                        "schema:picard",  "schema:ddl",    "schema:ddl_values"};
    const char *near = ps_nearest_name(name, known, sizeof known / sizeof known[0]);
    snprintf(detail, dsz, "the template's placeholder {%s} needs the field '%s', which the "
             "record lacks or has as null%s%s%s", name, name, near ? "; did you mean {" : "",
             near ? near : "", near ? "}?" : "");
}

int ps_template_render(const ps_template *t, const ps_render_fields *f,
                       const ps_schema_mask *mask, ps_buf *prompt, ps_buf *completion,
                       bool *has_completion, char *detail, size_t dsz)
{
    ps_buf_reset(prompt);
    ps_buf_reset(completion);
    *has_completion = t->has_completion;
    for (int k = 0; k < 2; k++) {
        const part *p = k ? &t->completion : &t->prompt;
        for (size_t i = 0; i < p->n; i++) {
            const char *m = missing(t, &p->segs[i], f);
            if (!m)
                continue;
            if (p->segs[i].kind == SEG_FIELD)
                field_missing(m, detail, dsz);
            else
                snprintf(detail, dsz, "the template's placeholder %s needs %s, which the "
                         "record lacks", m, p->segs[i].kind == SEG_DB_ID ? "a database id"
                                                                        : "a schema");
            return 1;
        }
    }
    ps_buf tmp;
    ps_buf_init(&tmp);
    int rc = render_part(t, &t->prompt, f, mask, prompt, &tmp);
    if (!rc && t->has_completion)
        rc = render_part(t, &t->completion, f, mask, completion, &tmp);
    /* never hand out a NULL text: an empty render is "" */
    if (!rc)
        rc = ps_buf_reserve(prompt, 1);
    if (!rc)
        rc = ps_buf_reserve(completion, 1);
    if (!rc) {
        prompt->data[prompt->len] = '\0';
        completion->data[completion->len] = '\0';
    }
    ps_buf_free(&tmp);
    return rc ? PS_ENOMEM : 0;
}
