/*
 * The public ps_cleaner: reads each input through source → records →
 * fields, cleans question and sql, drops duplicates, and reports every
 * record's outcome to the caller's sink while keeping the accounting.
 */
#include "ingest/fields.h"
#include "ingest/ingest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

struct ps_cleaner {
    ps_clean_options opts;
    ps_field_names names;
    char *name_store[4];
    ps_rules *rules;
    ps_dedupe *dedupe;
    ps_stats *stats;
    ps_buf fixed;  /* the raw record after UTF-8 repair */
    ps_buf q, s;   /* cleaned fields */
    ps_buf tmp;    /* scratch for the cleaning steps */
    ps_buf source, id;
    unsigned char *touched; /* per-rule flags for the current record */
    ps_fields fields;
};

void ps_clean_options_init(ps_clean_options *o)
{
    memset(o, 0, sizeof *o);
    o->format = PS_FORMAT_AUTO;
    o->question_field = "question";
    o->sql_field = NULL;
    o->label_field = "label";
    o->id_field = "id";
    o->utf8_policy = PS_UTF8_REJECT;
    o->question_normalization = PS_NORM_NFKC;
    o->sql_normalization = PS_NORM_NFKC;
    o->max_record_bytes = 1u << 20;
    o->max_field_bytes = 64u << 10;
}

int ps_cleaner_create(ps_cleaner **out, const ps_clean_options *opts, ps_error *err)
{
    *out = NULL;
    ps_cleaner *c = calloc(1, sizeof *c);
    if (!c)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    if (opts)
        c->opts = *opts;
    else
        ps_clean_options_init(&c->opts);
    ps_clean_options *o = &c->opts;
    if (!o->max_record_bytes || !o->max_field_bytes) {
        free(c);
        return ps_error_set(err, PS_EINVAL, "max_record_bytes and max_field_bytes must be > 0");
    }
    const char *given[4] = {o->question_field ? o->question_field : "question", o->sql_field,
                            o->label_field ? o->label_field : "label",
                            o->id_field ? o->id_field : "id"};
    for (int i = 0; i < 4; i++) {
        if (given[i] && !(c->name_store[i] = strdup(given[i]))) {
            ps_cleaner_free(c);
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        }
    }
    c->names.question = c->name_store[0];
    c->names.sql = c->name_store[1];
    c->names.label = c->name_store[2];
    c->names.id = c->name_store[3];
    o->question_field = c->names.question;
    o->sql_field = c->names.sql;
    o->label_field = c->names.label;
    o->id_field = c->names.id;
    if (ps_rules_create(&c->rules) || ps_dedupe_create(&c->dedupe) ||
        ps_stats_create(&c->stats)) {
        ps_cleaner_free(c);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    *out = c;
    return 0;
}

void ps_cleaner_free(ps_cleaner *c)
{
    if (!c)
        return;
    for (int i = 0; i < 4; i++)
        free(c->name_store[i]);
    ps_rules_free(c->rules);
    ps_dedupe_free(c->dedupe);
    ps_stats_free(c->stats);
    ps_buf *bufs[] = {&c->fixed, &c->q, &c->s, &c->tmp, &c->source, &c->id};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ps_buf_free(bufs[i]);
    ps_fields_free(&c->fields);
    free(c->touched);
    free(c);
}

int ps_cleaner_add_rules(ps_cleaner *c, const char *json_text, size_t len, const char *origin,
                         ps_error *err)
{
    int rc = ps_rules_add_json(c->rules, json_text, len, origin ? origin : "<rules>", err);
    if (rc)
        return rc;
    unsigned char *t = realloc(c->touched, ps_rules_count(c->rules) + 1);
    if (!t)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    c->touched = t;
    return 0;
}

int ps_cleaner_load_rules(ps_cleaner *c, const char *path, ps_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ps_error_set(err, errno == ENOENT ? PS_ENOENT : PS_EIO,
                            "%s: cannot open rules file: %s", path, strerror(errno));
    ps_buf b;
    ps_buf_init(&b);
    char chunk[8192];
    size_t n;
    int rc = 0;
    while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = ps_buf_append(&b, chunk, n);
    if (!rc && ferror(f))
        rc = ps_error_set(err, PS_EIO, "%s: read failed", path);
    else if (rc)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory reading %s", path);
    fclose(f);
    if (!rc)
        rc = ps_cleaner_add_rules(c, b.data ? b.data : "", b.len, path, err);
    ps_buf_free(&b);
    return rc;
}

void ps_cleaner_counts(const ps_cleaner *c, ps_clean_counts *counts)
{
    ps_stats_counts(c->stats, counts);
}

char *ps_cleaner_stats_json(const ps_cleaner *c) { return ps_stats_to_json(c->stats, c->rules); }

/* Per-field outcome of cleaning. */
typedef struct field_result {
    bool normalized, whitespace, unterminated;
    size_t controls_removed;
} field_result;

static void swap(ps_buf *a, ps_buf *b)
{
    ps_buf t = *a;
    *a = *b;
    *b = t;
}

static bool same(const ps_buf *a, const char *b, size_t n)
{
    return a->len == n && (n == 0 || memcmp(a->data, b, n) == 0);
}

/* Runs the cleaning steps on one field into `out`. */
/* Runs the cleaning steps on one field into `out`. A first pass over the
 * bytes (ps_text_scan) tells which steps can change anything; the others
 * are skipped, so clean ASCII text costs one scan and one copy. */
static int clean_field(ps_cleaner *c, int field, const char *in, size_t n, ps_buf *out,
                       field_result *fr, ps_rules_outcome *ro, ps_error *err)
{
    const ps_clean_options *o = &c->opts;
    bool is_sql = field == PS_FIELD_SQL;
    memset(fr, 0, sizeof *fr);
    memset(ro, 0, sizeof *ro);
    unsigned need = ps_text_scan(in, n);
    int rc = 0;
    ps_buf_reset(out);
    if (need & PS_SCAN_NONASCII) {
        rc = ps_text_normalize(in, n, is_sql ? o->sql_normalization : o->question_normalization,
                               out);
        if (rc)
            return ps_error_set(err, rc, "out of memory normalising text");
        fr->normalized = !same(out, in, n);
    } else if ((rc = ps_buf_append(out, in, n)) != 0) {
        return ps_error_set(err, rc, "out of memory");
    }
    if (need & (PS_SCAN_NONASCII | PS_SCAN_CONTROL)) {
        rc = ps_text_strip_controls(out->data, out->len, o->strip_joiners, &c->tmp,
                                    &fr->controls_removed);
        if (rc)
            return ps_error_set(err, rc, "out of memory removing control characters");
        swap(out, &c->tmp);
    }
    bool ruled = (ps_rules_fields(c->rules) & field) != 0;
    if (ruled) {
        rc = ps_rules_apply(c->rules, field, out, &c->tmp, c->touched, ro, err);
        if (rc || ro->dropped || ro->failed)
            return rc;
    }
    /* Folding text is the identity unless it has foldable whitespace;
     * SQL always runs it, for its unterminated-quote check. */
    bool fold = is_sql || ruled ||
                (need & (PS_SCAN_NONASCII | PS_SCAN_FOLD | PS_SCAN_CONTROL));
    if (!fold)
        return 0;
    if (is_sql)
        rc = ps_sql_fold_whitespace(out->data, out->len, o->sql_backslash_escapes, &c->tmp,
                                    &fr->unterminated);
    else
        rc = ps_text_fold_whitespace(out->data, out->len, &c->tmp);
    if (rc)
        return ps_error_set(err, rc, "out of memory folding whitespace");
    fr->whitespace = !same(&c->tmp, out->data, out->len);
    swap(out, &c->tmp);
    return 0;
}

typedef struct run_ctx {
    const char *path;     /* as given */
    const char *base;     /* its basename, for derived ids */
    ps_format fmt;
    ps_record_reader *rr;
    ps_column_map map;
    size_t ncols;
    ps_clean_sink sink;
    void *user;
} run_ctx;

static int emit(ps_cleaner *c, run_ctx *x, ps_clean_result *res)
{
    int rc = ps_stats_record(c->stats, x->path, res->outcome, res->reason, res->label);
    if (rc)
        return rc;
    return x->sink ? x->sink(x->user, res) : 0;
}

static int reject(ps_cleaner *c, run_ctx *x, ps_clean_result *res, const char *reason,
                  const char *detail)
{
    res->outcome = PS_OUTCOME_REJECTED;
    res->reason = reason;
    res->detail = detail;
    return emit(c, x, res);
}

/* "name:line" for line formats, "name:#index" for JSON arrays. */
static void position(ps_buf *b, const char *name, ps_format fmt, const ps_raw_record *rec)
{
    ps_buf_reset(b);
    ps_buf_puts(b, name);
    ps_buf_puts(b, fmt == PS_FORMAT_JSON ? ":#" : ":");
    ps_buf_put_u64(b, fmt == PS_FORMAT_JSON ? rec->index : rec->line);
}

static int process(ps_cleaner *c, run_ctx *x, const ps_raw_record *rec, ps_error *err)
{
    const ps_clean_options *o = &c->opts;
    ps_clean_result res;
    memset(&res, 0, sizeof res);
    char detail[240];
    position(&c->source, x->path, x->fmt, rec);
    res.source = c->source.data;
    res.original = rec->data;
    res.original_len = rec->len;
    res.original_truncated = rec->too_long;

    if (rec->too_long) {
        snprintf(detail, sizeof detail, "the record is longer than the limit of %zu bytes",
                 o->max_record_bytes);
        return reject(c, x, &res, "too_long", detail);
    }
    if (rec->error_reason)
        return reject(c, x, &res, rec->error_reason, rec->error_detail);

    const char *data = rec->data;
    size_t len = rec->len;
    size_t bad = ps_utf8_check(data, len);
    if (bad < len) {
        if (o->utf8_policy == PS_UTF8_REJECT) {
            snprintf(detail, sizeof detail, "invalid UTF-8 at byte %zu of the record", bad);
            return reject(c, x, &res, "invalid_utf8", detail);
        }
        size_t replaced = 0;
        ps_buf_reset(&c->fixed);
        if (ps_utf8_repair(data, len, &c->fixed, &replaced))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        data = c->fixed.data;
        len = c->fixed.len;
        ps_step_counts *st = ps_stats_steps(c->stats);
        st->utf8_repaired_records++;
        st->utf8_replacements += replaced;
    }

    ps_fields *f = &c->fields;
    if (x->fmt == PS_FORMAT_JSON || x->fmt == PS_FORMAT_JSONL) {
        ps_fields_from_json(f, data, len, &c->names);
    } else {
        const char *const *vals;
        const size_t *lens;
        size_t n = ps_record_reader_fields(x->rr, data, len, &vals, &lens);
        if (n == 0)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        ps_fields_from_row(f, vals, lens, n, x->ncols, &x->map);
    }
    res.label = f->reason ? NULL : f->label;
    if (f->reason)
        return reject(c, x, &res, f->reason, f->detail);

    if (f->id) {
        ps_buf_reset(&c->id);
        ps_buf_append(&c->id, f->id, f->id_len);
    } else {
        position(&c->id, x->base, x->fmt, rec);
    }
    res.id = c->id.data;

    if (f->question_len == 0 || f->sql_len == 0) {
        snprintf(detail, sizeof detail, "the %s is empty",
                 f->question_len == 0 ? "question" : "sql");
        return reject(c, x, &res, "empty_field", detail);
    }

    size_t nrules = ps_rules_count(c->rules);
    if (nrules)
        memset(c->touched, 0, nrules);
    field_result fq, fs;
    ps_rules_outcome ro;
    int rc = clean_field(c, PS_FIELD_QUESTION, f->question, f->question_len, &c->q, &fq, &ro,
                         err);
    if (!rc && !ro.dropped && !ro.failed)
        rc = clean_field(c, PS_FIELD_SQL, f->sql, f->sql_len, &c->s, &fs, &ro, err);
    if (rc)
        return rc;
    bool rules_changed = false;
    for (size_t i = 0; i < nrules; i++) {
        ps_rule_stats *rs = ps_rules_stats(c->rules, i);
        rs->matched += (c->touched[i] & 1) != 0;
        rs->changed += (c->touched[i] & 2) != 0;
        rules_changed |= (c->touched[i] & 2) != 0;
    }
    if (ro.dropped || ro.failed) {
        res.rule = ps_rules_name(c->rules, ro.rule);
        if (ro.dropped)
            ps_rules_stats(c->rules, ro.rule)->dropped++;
        return reject(c, x, &res, ro.dropped ? "dropped_by_rule" : "rule_error", ro.detail);
    }

    ps_step_counts *st = ps_stats_steps(c->stats);
    st->normalized_question += fq.normalized;
    st->normalized_sql += fs.normalized;
    st->control_records += fq.controls_removed + fs.controls_removed > 0;
    st->control_chars_removed += fq.controls_removed + fs.controls_removed;
    st->rules_changed_records += rules_changed;
    st->whitespace_question += fq.whitespace;
    st->whitespace_sql += fs.whitespace;
    st->sql_unterminated_quote += fs.unterminated;

    if (c->q.len == 0 || c->s.len == 0) {
        snprintf(detail, sizeof detail, "the %s is empty after cleaning",
                 c->q.len == 0 ? "question" : "sql");
        return reject(c, x, &res, "empty_after_cleaning", detail);
    }
    if (c->q.len > o->max_field_bytes || c->s.len > o->max_field_bytes) {
        snprintf(detail, sizeof detail, "the %s is %zu bytes, over the limit of %zu",
                 c->q.len > o->max_field_bytes ? "question" : "sql",
                 c->q.len > o->max_field_bytes ? c->q.len : c->s.len, o->max_field_bytes);
        return reject(c, x, &res, "too_long", detail);
    }

    res.question = c->q.data;
    res.question_len = c->q.len;
    res.sql = c->s.data;
    res.sql_len = c->s.len;
    res.outcome = PS_OUTCOME_KEPT;
    if (!o->keep_duplicates) {
        const char *first = NULL;
        bool conflict = false;
        uint32_t lh = f->label ? XXH32(f->label, f->label_len, 0) | 1u : 0;
        int d = ps_dedupe_insert(c->dedupe, c->q.data, c->q.len, c->s.data, c->s.len, res.id,
                                 lh, &first, &conflict);
        if (d < 0)
            return ps_error_set(err, PS_ENOMEM, "out of memory in duplicate detection");
        if (d == 1) {
            res.outcome = PS_OUTCOME_DUPLICATE;
            res.duplicate_of = first;
            st->label_conflicts += conflict;
            return emit(c, x, &res);
        }
    }
    bool changed = !same(&c->q, f->question, f->question_len) ||
                   !same(&c->s, f->sql, f->sql_len);
    st->changed_records += changed;
    return emit(c, x, &res);
}

int ps_cleaner_run(ps_cleaner *c, const char *path, ps_clean_sink sink, void *user,
                   ps_error *err)
{
    ps_source *src = NULL;
    int rc = ps_source_open(&src, path, err);
    if (rc)
        return rc;
    run_ctx x;
    memset(&x, 0, sizeof x);
    x.path = strcmp(path, "-") == 0 ? "<stdin>" : path;
    x.base = ps_path_basename(x.path);
    x.sink = sink;
    x.user = user;
    x.fmt = c->opts.format;
    if (x.fmt == PS_FORMAT_AUTO && (rc = ps_format_detect(src, &x.fmt, err)) != 0) {
        ps_source_close(src);
        return rc;
    }
    rc = ps_record_reader_create(&x.rr, src, x.fmt, c->opts.max_record_bytes, err);
    if (rc) {
        ps_source_close(src);
        return rc;
    }
    bool csv = x.fmt == PS_FORMAT_CSV || x.fmt == PS_FORMAT_TSV;
    bool mapped = false;
    ps_raw_record rec;
    for (;;) {
        rc = ps_record_reader_next(x.rr, &rec, err);
        if (rc <= 0)
            break;
        if (csv && !mapped) {
            const char *const *cols;
            x.ncols = ps_record_reader_columns(x.rr, &cols);
            char d[200];
            if (ps_fields_map_columns(&x.map, cols, x.ncols, &c->names, d, sizeof d)) {
                rc = ps_error_set(err, PS_EFORMAT, "%s:1: %s", x.path, d);
                break;
            }
            mapped = true;
        }
        rc = process(c, &x, &rec, err);
        if (rc)
            break;
    }
    ps_stats_steps(c->stats)->blank_lines += ps_record_reader_blank_lines(x.rr);
    ps_stats_add_input_bytes(c->stats, x.path, ps_source_bytes_decoded(src));
    ps_fields_clear(&c->fields);
    ps_record_reader_free(x.rr);
    ps_source_close(src);
    return rc < 0 ? rc : 0;
}

int ps_format_parse(const char *name, ps_format *out)
{
    static const char *const names[] = {"auto", "jsonl", "json", "csv", "tsv"};
    for (int i = 0; i < 5; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (ps_format)i;
            return 0;
        }
    if (strcmp(name, "ndjson") == 0) {
        *out = PS_FORMAT_JSONL;
        return 0;
    }
    return PS_EINVAL;
}

int ps_normalization_parse(const char *name, ps_normalization *out)
{
    if (strcmp(name, "nfkc") == 0)
        *out = PS_NORM_NFKC;
    else if (strcmp(name, "nfc") == 0)
        *out = PS_NORM_NFC;
    else if (strcmp(name, "none") == 0)
        *out = PS_NORM_NONE;
    else
        return PS_EINVAL;
    return 0;
}

int ps_utf8_policy_parse(const char *name, ps_utf8_policy *out)
{
    if (strcmp(name, "reject") == 0)
        *out = PS_UTF8_REJECT;
    else if (strcmp(name, "replace") == 0)
        *out = PS_UTF8_REPLACE;
    else
        return PS_EINVAL;
    return 0;
}
