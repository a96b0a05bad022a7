/*
 * The public ps_cleaner: reads each input through source → records →
 * fields, cleans question and sql, drops duplicates, and reports every
 * record's outcome to the caller's sink while keeping the accounting.
 */
#include "ingest/cleaner_int.h"
#include "common/options.h"
#include "common/strmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* ps_clean_counts's size in 0.2.0, its first published version. */
#define COUNTS_SIZE_0_2 PS_SIZE_THROUGH(ps_clean_counts, bytes_in)

/* The sizes ps_clean_options has had in published versions, oldest first
 * (common/options.h): when a field is appended, append its new sizeof. */
static const size_t CLEAN_OPTIONS_SIZES[] = {offsetof(ps_clean_options, db_field),
                                              sizeof(ps_clean_options)};
#define N_CLEAN_OPTIONS_SIZES (sizeof CLEAN_OPTIONS_SIZES / sizeof CLEAN_OPTIONS_SIZES[0])

static void clean_defaults(ps_clean_options *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
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
    o->execute_timeout_ms = 2000;
}

int ps_clean_options_init_size(ps_clean_options *opts, size_t struct_size)
{
    ps_clean_options d;
    clean_defaults(&d);
    return ps_options_init_copy(opts, struct_size, &d, CLEAN_OPTIONS_SIZES, N_CLEAN_OPTIONS_SIZES,
                                "ps_clean_options");
}

/* Splits the field options into candidate lists (the cleaner keeps its
 * own copies) and the names messages show ("'SQL' or 'query'"). */
static int set_names(ps_cleaner *c)
{
    ps_clean_options *o = &c->opts;
    const char *given[4] = {o->question_field ? o->question_field : "question", o->sql_field,
                            o->label_field ? o->label_field : "label",
                            o->id_field ? o->id_field : "id"};
    ps_field_spec *specs[4] = {&c->names.question, &c->names.sql, &c->names.label, &c->names.id};
    for (int i = 0; i < 4; i++) {
        if (!given[i]) { /* the default sql */
            memset(specs[i], 0, sizeof *specs[i]);
            specs[i]->text = "sql', 'query' or 'SQL";
            continue;
        }
        c->name_store[i] = strdup(given[i]);
        c->shown_store[i] = malloc(strlen(given[i]) * 7 + 1);
        if (!c->name_store[i] || !c->shown_store[i])
            return PS_ENOMEM;
        if (ps_field_spec_parse(specs[i], c->name_store[i], c->shown_store[i]))
            return PS_EINVAL;
        char *sh = c->shown_store[i];
        sh[0] = '\0';
        for (size_t k = 0; k < specs[i]->n; k++) {
            if (k)
                strcat(sh, "' or '");
            strcat(sh, specs[i]->cand[k]);
        }
    }
    /* From here on c->names is read; the caller's strings may go. */
    o->question_field = o->sql_field = o->label_field = o->id_field = NULL;
    return 0;
}

int ps_cleaner_create(const ps_clean_options *opts, ps_cleaner **out, ps_error *err)
{
    *out = NULL;
    ps_cleaner *c = calloc(1, sizeof *c);
    if (!c)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    clean_defaults(&c->opts);
    int rc = ps_options_adopt(&c->opts, sizeof c->opts, opts, CLEAN_OPTIONS_SIZES,
                              N_CLEAN_OPTIONS_SIZES, "ps_clean_options", err);
    if (rc) {
        free(c);
        return rc;
    }
    ps_clean_options *o = &c->opts;
    if (!o->max_record_bytes || !o->max_field_bytes) {
        free(c);
        return ps_error_set(err, PS_EINVAL, "max_record_bytes and max_field_bytes must be > 0");
    }
    rc = set_names(c);
    if (rc) {
        ps_cleaner_free(c);
        return ps_error_set(err, rc, rc == PS_EINVAL ? "a field name list is empty, has an empty "
                                                       "name or more than %d names"
                                                     : "out of memory",
                            PS_FIELD_CANDIDATES);
    }
    if ((rc = ps_t2s_names(c)) != 0) {
        ps_cleaner_free(c);
        return ps_error_set(err, rc, rc == PS_EINVAL ? "the database or turn field list is "
                                                       "empty, has an empty name or more than "
                                                       "%d names"
                                                     : "out of memory",
                            PS_FIELD_CANDIDATES);
    }
    if (ps_rules_create(&c->rules) || ps_dedupe_parts_init(c) ||
        ps_dedupe_create(&c->ids) || ps_stats_create(&c->stats) ||
        ps_named_inputs_create(&c->named)) {
        ps_cleaner_free(c);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    ps_stats_enable_text2sql(c->stats, false, c->turns_path != NULL);
    *out = c;
    return 0;
}

void ps_cleaner_free(ps_cleaner *c)
{
    if (!c)
        return;
    for (int i = 0; i < 4; i++) {
        free(c->name_store[i]);
        free(c->shown_store[i]);
    }
    for (size_t i = 0; i < c->bases.n; i++)
        free(c->base_path[i]);
    free(c->base_path);
    free(c->base_clash);
    ps_t2s_names_free(c);
    ps_strmap_free(&c->bases);
    ps_dedupe_free(c->ids);
    ps_named_inputs_free(c->named);
    ps_clean_worker_free(c->worker);
    ps_rules_free(c->rules);
    ps_dedupe_parts_free(c);
    ps_stats_free(c->stats);
    for (size_t i = 0; i < c->n_sources; i++)
        ps_cleaner_free(c->sources[i]);
    free(c->sources);
    free(c->id_prefix);
    free(c);
}

int ps_clean_worker_create(const ps_cleaner *c, ps_clean_worker **out)
{
    *out = NULL;
    ps_clean_worker *w = calloc(1, sizeof *w);
    if (!w)
        return PS_ENOMEM;
    w->c = c;
    w->match_data = ps_rules_match_data_new(c->rules);
    w->touched_cap = ps_rules_count(c->rules) + 1;
    w->touched = calloc(w->touched_cap, 1);
    if (!w->match_data || !w->touched) {
        ps_clean_worker_free(w);
        return PS_ENOMEM;
    }
    ps_csv_row_init(&w->row);
    *out = w;
    return 0;
}

void ps_clean_worker_free(ps_clean_worker *w)
{
    if (!w)
        return;
    ps_buf *bufs[] = {&w->fixed, &w->q, &w->s, &w->tmp, &w->source, &w->id, &w->keys};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ps_buf_free(bufs[i]);
    ps_fields_free(&w->fields);
    ps_csv_row_free(&w->row);
    ps_rules_match_data_free(w->match_data);
    ps_t2s_worker_free(&w->t2s);
    if (w->check_scratch && w->c->check_free)
        w->c->check_free(w->check_scratch);
    free(w->touched);
    free(w);
}

const ps_rules *ps_cleaner_rules(const ps_cleaner *c) { return c->rules; }

int ps_cleaner_add_rules(ps_cleaner *c, const char *json_text, size_t len, const char *origin,
                         ps_error *err)
{
    if (c->worker) /* rules must be loaded before records are cleaned */
        return ps_error_set(err, PS_EINVAL, "rules cannot be added after cleaning started");
    return ps_rules_add_json(c->rules, json_text, len, origin ? origin : "<rules>", err);
}

/* A rules file is a small JSON array; anything larger is not one. */
#define PS_RULES_FILE_MAX ((size_t)16 << 20)

int ps_cleaner_load_rules(ps_cleaner *c, const char *path, ps_error *err)
{
    char *text;
    size_t len;
    int rc = ps_file_read_all(path, "rules file", PS_RULES_FILE_MAX, &text, &len, err);
    if (!rc)
        rc = ps_cleaner_add_rules(c, text, len, path, err);
    free(text);
    return rc;
}

int ps_cleaner_get_counts_size(const ps_cleaner *c, ps_clean_counts *counts, size_t size)
{
    ps_clean_counts o;
    memset(&o, 0, sizeof o);
    ps_stats_counts(c->stats, &o);
    return ps_struct_out(counts, size, &o, sizeof o, COUNTS_SIZE_0_2, "ps_clean_counts", NULL);
}

/* The 0.2.0 entry point (pairshard/common.h, "Structs the library fills"). */
#undef ps_cleaner_get_counts
PS_API void ps_cleaner_get_counts(const ps_cleaner *c, ps_clean_counts *counts);

void ps_cleaner_get_counts(const ps_cleaner *c, ps_clean_counts *counts)
{
    ps_cleaner_get_counts_size(c, counts, COUNTS_SIZE_0_2);
}

char *ps_cleaner_stats_json(const ps_cleaner *c) { return ps_stats_to_json(c->stats, c->rules); }


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

/* Runs the cleaning steps on one field into `out`. A first pass over the
 * bytes (ps_text_scan) tells which steps can change anything; the others
 * are skipped, so clean ASCII text costs one scan and one copy. */
int ps_clean_field(ps_clean_worker *w, int field, const char *in, size_t n, ps_buf *out,
                       ps_field_result *fr, ps_rules_outcome *ro, ps_error *err)
{
    const ps_cleaner *c = w->c;
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
        rc = ps_text_strip_controls(out->data, out->len, o->strip_joiners, &w->tmp,
                                    &fr->controls_removed);
        if (rc)
            return ps_error_set(err, rc, "out of memory removing control characters");
        swap(out, &w->tmp);
    }
    bool ruled = (ps_rules_fields(c->rules) & field) != 0;
    if (ruled) {
        rc = ps_rules_apply(c->rules, w->match_data, field, out, &w->tmp, w->touched, ro, err);
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
        rc = ps_sql_fold_whitespace(out->data, out->len, o->sql_backslash_escapes, &w->tmp,
                                    &fr->unterminated);
    else
        rc = ps_text_fold_whitespace(out->data, out->len, &w->tmp);
    if (rc)
        return ps_error_set(err, rc, "out of memory folding whitespace");
    fr->whitespace = !same(&w->tmp, out->data, out->len);
    swap(out, &w->tmp);
    return 0;
}

static unsigned decimal_digits(uint64_t v)
{
    unsigned n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* "name:line" for line formats, "name:#index" for JSON arrays. */
static void position(ps_buf *b, const char *name, ps_format fmt, const ps_raw_record *rec)
{
    ps_buf_puts(b, name);
    ps_buf_puts(b, fmt == PS_FORMAT_JSON ? ":#" : ":");
    ps_buf_put_u64(b, fmt == PS_FORMAT_JSON ? rec->index : rec->line);
}

static int reject(ps_clean_item *it, const char *reason, const char *detail)
{
    it->res.outcome = PS_OUTCOME_REJECTED;
    it->res.reason = reason;
    it->res.detail = detail;
    return 0;
}

/* The records of an input whose keys a missing named field's message may
 * list. A worker that knows only a lower bound of a record's index (lines
 * split from a block) may take its keys; ps_clean_item_settle_index drops
 * them once the committing thread knows the index. */
#define KEYS_RECORDS 8

/* What the named-field check needs from a record: which fields it had and,
 * from an input's first records when a named field is missing, its keys
 * (JSON; a CSV header's columns are noted once, by ps_input_next). */
static void note_presence(ps_clean_worker *w, const ps_input_ctx *in, const ps_raw_record *rec,
                          ps_fields *f, const char *data, size_t len, ps_clean_item *it)
{
    const ps_cleaner *c = w->c;
    it->examined = f->examined;
    it->present = f->present;
    unsigned named = c->opts.named_fields, has = 0;
    has |= (named & PS_NAMED_QUESTION) && !(f->present & PS_HAS_QUESTION);
    has |= (named & PS_NAMED_SQL) && !(f->present & PS_HAS_SQL);
    has |= (named & PS_NAMED_LABEL) && !(f->present & PS_HAS_LABEL);
    has |= (named & PS_NAMED_ID) && !(f->present & PS_HAS_ID);
    if (!has || !f->examined || rec->index >= KEYS_RECORDS ||
        (in->fmt != PS_FORMAT_JSON && in->fmt != PS_FORMAT_JSONL))
        return;
    if (ps_fields_json_keys(f, data, len, &w->keys) == 0) {
        it->keys = w->keys.data;
        it->keys_len = w->keys.len;
    }
}

/* "/<turn>" after a dialogue's id or source. */
static void turn_suffix(ps_buf *b, const ps_raw_record *rec)
{
    if (rec->turn >= 0) {
        ps_buf_putc(b, '/');
        ps_buf_put_u64(b, (uint64_t)rec->turn);
    }
}

/* UTF-8 validation (reject, or repair into w->fixed): 1 when rejected. */
static int check_utf8(ps_clean_worker *w, const char **data, size_t *len, ps_clean_item *it)
{
    size_t bad = ps_utf8_check(*data, *len);
    if (bad == *len)
        return 0;
    if (w->c->opts.utf8_policy == PS_UTF8_REJECT) {
        snprintf(w->detail, sizeof w->detail, "invalid UTF-8 at byte %zu of the record", bad);
        return reject(it, "invalid_utf8", w->detail) + 1;
    }
    size_t replaced = 0;
    ps_buf_reset(&w->fixed);
    if (ps_utf8_repair(*data, *len, &w->fixed, &replaced))
        return PS_ENOMEM;
    *data = w->fixed.data;
    *len = w->fixed.len;
    it->utf8_repaired = true;
    it->utf8_replacements = replaced;
    return 0;
}

/* The record's fields into w->fields: 0, 1 (rejected: f->reason), or
 * PS_ENOMEM. */
static int read_fields(ps_clean_worker *w, const ps_input_ctx *in, const ps_raw_record *rec,
                       const char *data, size_t len)
{
    ps_fields *f = &w->fields;
    if (rec->turn >= 0)
        return ps_turn_fields(w, rec, data, len);
    if (in->fmt == PS_FORMAT_JSON || in->fmt == PS_FORMAT_JSONL)
        return ps_fields_from_json(f, data, len, &w->c->names) < 0 ? PS_ENOMEM : 0;
    if (ps_csv_split(&w->row, ps_format_delimiter(in->fmt), data, len))
        return PS_ENOMEM;
    ps_fields_from_row(f, w->row.fields, w->row.lens, w->row.n, in->ncols, &in->map);
    return 0;
}

/* Cleans question and sql: 0, 1 (rejected), or a negative code. */
static int clean_pair(ps_clean_worker *w, ps_fields *f, ps_clean_item *it, ps_error *err)
{
    const ps_cleaner *c = w->c;
    const ps_clean_options *o = &c->opts;
    char *detail = w->detail;
    size_t dsz = sizeof w->detail;
    size_t nrules = ps_rules_count(c->rules);
    if (nrules)
        memset(w->touched, 0, nrules);
    it->cleaned = true;
    ps_rules_outcome ro;
    int rc = ps_clean_field(w, PS_FIELD_QUESTION, f->question, f->question_len, &w->q, &it->fq,
                            &ro, err);
    if (!rc && !ro.dropped && !ro.failed)
        rc = ps_clean_field(w, PS_FIELD_SQL, f->sql, f->sql_len, &w->s, &it->fs, &ro, err);
    if (rc)
        return rc;
    if (ro.dropped || ro.failed) {
        it->stepped = false; /* a record a rule stopped counts in no step */
        it->res.rule = ps_rules_name(c->rules, ro.rule);
        if (ro.dropped)
            it->dropped_rule = (long)ro.rule;
        snprintf(detail, dsz, "%s", ro.detail);
        return reject(it, ro.dropped ? "dropped_by_rule" : "rule_error", detail) + 1;
    }
    it->stepped = true;
    if (w->q.len == 0 || w->s.len == 0) {
        snprintf(detail, dsz, "the %s is empty after cleaning",
                 w->q.len == 0 ? "question" : "sql");
        return reject(it, "empty_after_cleaning", detail) + 1;
    }
    if (w->q.len > o->max_field_bytes || w->s.len > o->max_field_bytes) {
        bool qlong = w->q.len > o->max_field_bytes;
        snprintf(detail, dsz, "the %s is %zu bytes, over the limit of %zu",
                 qlong ? "question" : "sql", qlong ? w->q.len : w->s.len, o->max_field_bytes);
        return reject(it, "too_long", detail) + 1;
    }
    return 0;
}

int ps_clean_record(ps_clean_worker *w, const ps_input_ctx *in, const ps_raw_record *rec,
                    ps_clean_item *it, ps_error *err)
{
    const ps_cleaner *c = w->c;
    const ps_clean_options *o = &c->opts;
    memset(it, 0, sizeof *it);
    it->sql_raw_class = it->sql_clean_class = it->exec_status = it->exec_before = -1;
    ps_clean_result *res = &it->res;
    it->touched = w->touched;
    it->dropped_rule = -1;
    char *detail = w->detail;
    size_t dsz = sizeof w->detail;
    ps_buf_reset(&w->source);
    position(&w->source, in->path, in->fmt, rec);
    turn_suffix(&w->source, rec);
    res->source = w->source.data;
    res->original = rec->data;
    res->original_len = rec->len;
    res->original_truncated = rec->too_long;

    if (rec->too_long) {
        snprintf(detail, dsz, "the record is longer than the limit of %zu bytes",
                 o->max_record_bytes);
        return reject(it, "too_long", detail);
    }
    if (rec->error_reason) {
        snprintf(detail, dsz, "%s", rec->error_detail);
        return reject(it, rec->error_reason, detail);
    }

    const char *data = rec->data;
    size_t len = rec->len;
    int rc = check_utf8(w, &data, &len, it);
    if (rc)
        return rc < 0 ? ps_error_set(err, PS_ENOMEM, "out of memory") : 0;
    ps_fields *f = &w->fields;
    if (read_fields(w, in, rec, data, len) < 0)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    note_presence(w, in, rec, f, data, len, it);
    if (f->reason) {
        snprintf(detail, dsz, "%s", f->detail);
        return reject(it, f->reason, detail);
    }
    res->label = f->label;
    it->label_len = f->label_len;
    it->parsed = true;
    it->raw_question = f->question;
    it->raw_question_len = f->question_len;
    it->raw_sql = f->sql;
    it->raw_sql_len = f->sql_len;
    if (w->c->names.difficulty.n) /* a record without the field is a level of its own */
        it->difficulty = f->difficulty ? f->difficulty : "missing";
    it->id_from_field = f->id != NULL;
    ps_buf_reset(&w->id);
    if (c->id_prefix) /* a mixture's source: "<name>/" first */
        ps_buf_append(&w->id, c->id_prefix, c->id_prefix_len);
    if (f->id) {
        ps_buf_append(&w->id, f->id, f->id_len);
    } else {
        position(&w->id, in->base, in->fmt, rec);
        it->id_default = rec->turn < 0; /* a turn's id has a suffix */
        it->id_pos = in->fmt == PS_FORMAT_JSON ? rec->index : rec->line;
        it->id_prefix_len = w->id.len - decimal_digits(it->id_pos);
        it->id_prefix_hash = XXH3_64bits(w->id.data, it->id_prefix_len);
    }
    turn_suffix(&w->id, rec);
    res->id = w->id.data;
    if (it->id_from_field) /* the commit's id-collision check looks it up */
        it->id_hash = ps_dedupe_hash(res->id, strlen(res->id), "", 0); /* as C strings compare */

    if (f->question_len == 0 || f->sql_len == 0) {
        snprintf(detail, dsz, "the %s is empty", f->question_len == 0 ? "question" : "sql");
        return reject(it, "empty_field", detail);
    }
    rc = clean_pair(w, f, it, err);
    if (rc)
        return rc < 0 ? rc : 0;
    res->outcome = PS_OUTCOME_KEPT;
    res->question = w->q.data;
    res->question_len = w->q.len;
    res->sql = w->s.data;
    res->sql_len = w->s.len;
    it->changed = !same(&w->q, f->question, f->question_len) || !same(&w->s, f->sql, f->sql_len);
    it->hash = ps_dedupe_hash(w->q.data, w->q.len, w->s.data, w->s.len);
    it->label_hash = f->label ? XXH32(f->label, f->label_len, 0) | 1u : 0;
    rc = ps_t2s_active(c) || c->read_db ? ps_t2s_record(w, rec, it, err) : 0;
    if (rc || !c->check || res->outcome != PS_OUTCOME_KEPT)
        return rc;
    const char *why = NULL;
    rc = c->check(c->check_user, &w->check_scratch, res, &why, detail, dsz, err);
    return rc || !why ? rc : reject(it, why, detail);
}

int ps_cleaner_set_check(ps_cleaner *c, ps_clean_check_fn fn, void *user,
                         void (*free_scratch)(void *), ps_error *err)
{
    if (c->worker)
        return ps_error_set(err, PS_EINVAL, "a check must be set before cleaning starts");
    c->check = fn;
    c->check_user = user;
    c->check_free = free_scratch;
    return 0;
}

/* Kept records that share an id taken from the id field are counted, with
 * examples: a trainer keying anything by id would mix them up. Default ids
 * ("<input>:#<index>", the input's path when base names clash) are unique
 * by construction and skip the lookup, which would cost ~20% of a clean. */
static int note_id(ps_cleaner *c, ps_clean_item *it, ps_error *err)
{
    const ps_clean_result *res = &it->res;
    if (!it->id_from_field)
        return 0;
    const char *first = NULL;
    bool unused;
    size_t n = it->source_len ? it->source_len : strlen(res->source);
    int d = ps_dedupe_insert_hash(c->ids, it->id_hash, res->source, n, 0, &first, &unused);
    it->id_collision = d == 1;
    if (d == 1)
        d = ps_stats_id_collision(c->stats, res->id, first, res->source);
    return d < 0 ? ps_error_set(err, PS_ENOMEM, "out of memory checking ids") : 0;
}

/* A committed record's cleaning steps and rules into c's accounting. */
static void account_steps(ps_cleaner *c, const ps_clean_item *it)
{
    ps_step_counts *st = ps_stats_steps(c->stats);
    if (it->utf8_repaired) {
        st->utf8_repaired_records++;
        st->utf8_replacements += it->utf8_replacements;
    }
    if (it->cleaned) {
        bool rules_changed = false;
        for (size_t i = 0; i < ps_rules_count(c->rules); i++) {
            ps_rule_stats *rs = ps_rules_stats(c->rules, i);
            rs->matched += (it->touched[i] & 1) != 0;
            rs->changed += (it->touched[i] & 2) != 0;
            rules_changed |= (it->touched[i] & 2) != 0;
        }
        if (it->dropped_rule >= 0)
            ps_rules_stats(c->rules, (size_t)it->dropped_rule)->dropped++;
        if (it->stepped) {
            const ps_field_result *fq = &it->fq, *fs = &it->fs;
            st->normalized_question += fq->normalized;
            st->normalized_sql += fs->normalized;
            st->control_records += fq->controls_removed + fs->controls_removed > 0;
            st->control_chars_removed += fq->controls_removed + fs->controls_removed;
            st->rules_changed_records += rules_changed;
            st->whitespace_question += fq->whitespace;
            st->whitespace_sql += fs->whitespace;
            st->sql_unterminated_quote += fs->unterminated;
        }
    }
}

int ps_cleaner_commit(ps_cleaner *c, const char *input, ps_clean_item *it, ps_error *err)
{
    return ps_cleaner_commit_as(c, input, it, NULL, err);
}

int ps_cleaner_commit_as(ps_cleaner *c, const char *input, ps_clean_item *it,
                         const ps_clean_item *same, ps_error *err)
{
    account_steps(c, it);
    ps_step_counts *st = ps_stats_steps(c->stats);
    ps_clean_result *res = &it->res;
    if (!it->resolved && res->outcome == PS_OUTCOME_KEPT && !c->opts.keep_duplicates) {
        if (c->split) /* its thread was to look it up */
            return ps_error_set(err, PS_EINVAL,
                                "%s: the record was not looked up for duplicates", res->source);
        int rc = ps_cleaner_resolve(c, 0, it, err); /* the one part, in input order */
        if (rc)
            return rc;
    }
    st->label_conflicts += it->label_conflict;
    if (res->outcome == PS_OUTCOME_KEPT) {
        st->changed_records += it->changed;
        if (note_id(c, it, err))
            return PS_ENOMEM;
    }
    if ((ps_t2s_active(c) || c->sources_sql) &&
        ps_stats_sql(c->stats, res->id, it->sql_raw_class, it->sql_clean_class,
                     it->exec_status, it->exec_rows))
        return ps_error_set(err, PS_ENOMEM, "out of memory in the accounting");
    uint32_t known = same && res->label ? same->label_no : PS_LABEL_NO_NONE;
    if (ps_stats_record_known(c->stats, input, res->outcome, res->reason, res->label, known,
                              &it->label_no))
        return ps_error_set(err, PS_ENOMEM, "out of memory in the accounting");
    return 0;
}

void ps_cleaner_prefetch(const ps_cleaner *c, const ps_clean_item *it)
{
    /* the accounting compares the label's bytes, which a worker wrote,
     * unless an earlier record of the chunk has the same label */
    if (it->res.label && !it->label_as)
        __builtin_prefetch(it->res.label);
    if (it->res.outcome == PS_OUTCOME_KEPT && !c->opts.keep_duplicates && !c->split)
        ps_cleaner_resolve_prefetch(c, 0, it);
    if (it->res.outcome == PS_OUTCOME_KEPT && it->id_from_field)
        ps_dedupe_prefetch(c->ids, it->id_hash);
}

int ps_cleaner_note_fields(ps_cleaner *c, const char *input, const ps_clean_item *it)
{
    if (!c->opts.named_fields) /* nothing to check */
        return 0;
    return ps_named_inputs_note(c->named, input, it->examined, it->present, it->keys,
                                it->keys_len);
}

int ps_cleaner_check_fields(const ps_cleaner *c, const char *input, ps_error *err)
{
    return ps_named_inputs_check(c->named, &c->names, c->opts.named_fields, input, err);
}

/* Registers the base name of `path`; a second path with the same base name
 * marks it as clashing when `declared`. Returns the base's index or -1. */
static long add_base(ps_cleaner *c, const char *path, bool declared)
{
    if (c->bases.n % 16 == 0) { /* room first: map and arrays stay in step */
        size_t cap = c->bases.n + 16;
        char **np = realloc(c->base_path, cap * sizeof *np);
        if (np)
            c->base_path = np;
        bool *nc = np ? realloc(c->base_clash, cap * sizeof *nc) : NULL;
        if (!nc)
            return -1;
        c->base_clash = nc;
    }
    bool added;
    long i = ps_strmap_add(&c->bases, ps_path_basename(path), &added);
    if (i < 0)
        return -1;
    if (added) {
        c->base_clash[i] = false;
        if (!(c->base_path[i] = strdup(path)))
            return -1;
    } else if (declared && strcmp(c->base_path[i], path) != 0) {
        c->base_clash[i] = true;
    }
    return i;
}

int ps_cleaner_declare_inputs(ps_cleaner *c, const char *const *paths, size_t n, ps_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (add_base(c, strcmp(paths[i], "-") == 0 ? "<stdin>" : paths[i], true) < 0)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

/* The name default ids start with: the base name, or the path as given
 * when another input of the run has the same base name. */
static const char *id_prefix(ps_cleaner *c, const char *path)
{
    const char *base = ps_path_basename(path);
    long i = ps_strmap_find(&c->bases, base);
    if (i < 0)
        i = add_base(c, path, false);
    if (i < 0)
        return base;
    bool clash = c->base_clash[i] || strcmp(c->base_path[i], path) != 0;
    return clash ? path : base;
}

int ps_input_open(ps_cleaner *c, ps_input_ctx *in, const char *path, ps_error *err)
{
    memset(in, 0, sizeof *in);
    int rc = ps_source_open(&in->src, path, err);
    if (rc)
        return rc;
    in->path = strcmp(path, "-") == 0 ? "<stdin>" : path;
    in->base = id_prefix(c, in->path);
    in->fmt = c->opts.format;
    if (in->fmt == PS_FORMAT_AUTO && (rc = ps_format_detect(in->src, &in->fmt, err)) != 0)
        goto fail;
    rc = ps_record_reader_create(&in->rr, in->src, in->fmt, c->opts.max_record_bytes, err);
    if (rc)
        goto fail;
    return 0;
fail:
    ps_source_close(in->src);
    in->src = NULL;
    return rc;
}

void ps_cleaner_set_expect_share(ps_cleaner *c, size_t share) { c->expect_share = share; }

/* After an input's first 4096 records (or 4 MiB), sizes the duplicate and
 * id tables for the records the rest of the file promises at that rate,
 * lowered by a tenth (at most 1.5 M records), so that they need not double
 * again and again as they fill. Only a hint: a compressed input (larger than its file), a
 * stream, a wrong guess or a failed allocation change nothing but speed. */
static void expect_records(ps_cleaner *c, ps_input_ctx *in, uint64_t records, uint64_t bytes,
                           bool now)
{
    in->seen_records += records;
    in->seen_bytes += bytes;
    if (!now && in->seen_records < 4096 && in->seen_bytes < (4u << 20))
        return;
    in->expected = true;
    if (!in->seen_records || !in->seen_bytes)
        return;
    struct stat st;
    if (stat(in->path, &st) || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size <= in->seen_bytes)
        return;
    double rest = (double)((uint64_t)st.st_size - in->seen_bytes) / (double)in->seen_bytes *
                  (double)in->seen_records * 0.9;
    double n = (rest + (double)in->seen_records) / (double)(c->expect_share ? c->expect_share : 1);
    /* A guess can be far off (small first records, large later ones): at
     * most 2^21 slots (64 MiB) are reserved; growth covers the rest. */
    if (n > (double)((1u << 21) / 4 * 3 - 1))
        n = (double)((1u << 21) / 4 * 3 - 1);
    if (!c->opts.keep_duplicates)
        ps_dedupe_parts_expect(c, (size_t)n);
    (void)ps_dedupe_reserve(c->ids, ps_dedupe_count(c->ids) + (size_t)n);
}

int ps_input_next(ps_cleaner *c, ps_input_ctx *in, ps_raw_record *rec, ps_error *err)
{
    if (c->turns_path)
        return ps_turns_next(c, in, rec, err);
    int rc = ps_input_next_record(c, in, rec, err);
    if (rc == 1 && !in->expected)
        expect_records(c, in, 1, rec->len + 1, false);
    return rc;
}

int ps_input_take_lines(ps_cleaner *c, ps_input_ctx *in, ps_buf *dst, size_t want_bytes,
                        size_t max_lines, uint64_t *first_line, ps_error *err)
{
    *first_line = 0;
    if (c->turns_path || !in->rr) /* a dialogue's turns come from ps_turns_next */
        return 0;
    size_t before = dst->len;
    int n = ps_record_reader_take_lines(in->rr, dst, want_bytes, max_lines, first_line, err);
    if (n > 0) {
        in->took_lines = true;
        if (!in->expected) /* blank lines count as records here: only a hint */
            expect_records(c, in, (uint64_t)n, dst->len - before, false);
    }
    return n;
}

int ps_range_reader_start(ps_range_reader *rr, ps_cleaner *c, ps_input_ctx *in, ps_error *err)
{
    uint64_t pending, line;
    int fd = in->src ? ps_source_plain_fd(in->src) : -1;
    struct stat st;
    if (c->turns_path || !in->rr || fd < 0 || !ps_record_reader_at_line(in->rr, &pending, &line) ||
        fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    uint64_t from = ps_source_bytes_decoded(in->src) - pending, size = (uint64_t)st.st_size;
    if (size < from || size - from < PS_RANGES_MIN)
        return 0;
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0)
        return ps_error_set(err, ps_errno_code(errno), "%s: %s", in->path, strerror(errno));
    *rr = (ps_range_reader){.on = true, .first = true, .fd = dup, .pos = from, .size = size,
                            .line = line, .max = ps_record_reader_max(in->rr), .seq = rr->seq};
    in->took_lines = true;
    in->ranged_size = size;
    if (!in->expected) /* the tables sized from the records read so far */
        expect_records(c, in, 0, 0, true);
    return 1;
}

void ps_input_share(ps_input_ctx *dst, const ps_input_ctx *in)
{
    *dst = *in;
    dst->src = NULL;
    dst->rr = NULL;
}

void ps_cleaner_add_blank_lines(ps_cleaner *c, uint64_t n)
{
    ps_stats_steps(c->stats)->blank_lines += n;
}

void ps_clean_item_settle_index(ps_clean_item *it, uint64_t index)
{
    if (index >= KEYS_RECORDS) {
        it->keys = NULL;
        it->keys_len = 0;
    }
}

int ps_input_next_record(ps_cleaner *c, ps_input_ctx *in, ps_raw_record *rec, ps_error *err)
{
    int rc = ps_record_reader_next(in->rr, rec, err);
    rec->turn = -1;
    if (rc == 1 && (in->fmt == PS_FORMAT_CSV || in->fmt == PS_FORMAT_TSV) && !in->mapped) {
        const char *const *cols;
        in->ncols = ps_record_reader_columns(in->rr, &cols);
        char d[200];
        if (ps_fields_map_columns(&in->map, cols, in->ncols, &c->names, d, sizeof d))
            return ps_error_set(err, PS_EFORMAT, "%s:1: %s", in->path, d);
        in->mapped = true;
        ps_buf keys; /* the header's columns, for the named-field check */
        ps_buf_init(&keys);
        int nrc = 0;
        for (size_t i = 0; !nrc && i < in->ncols; i++)
            nrc = ps_buf_append(&keys, cols[i], strlen(cols[i]) + 1);
        if (!nrc)
            nrc = ps_named_inputs_note(c->named, in->path, false, 0, keys.data, keys.len);
        ps_buf_free(&keys);
        if (nrc)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    return rc;
}

void ps_input_close(ps_cleaner *c, ps_input_ctx *in)
{
    if (in->rr) {
        uint64_t blank = ps_record_reader_blank_lines(in->rr);
        ps_stats_steps(c->stats)->blank_lines += blank;
        if (c->owner) /* a mixture's source: the overall accounting too */
            ps_stats_steps(c->owner->stats)->blank_lines += blank;
        ps_record_reader_free(in->rr);
    }
    if (in->src) {
        uint64_t bytes = in->ranged_size ? in->ranged_size : ps_source_bytes_decoded(in->src);
        ps_stats_add_input_bytes(c->stats, in->path, bytes);
        if (c->owner)
            ps_stats_add_input_bytes(c->owner->stats, in->path, bytes);
        ps_source_close(in->src);
    }
    ps_buf_free(&in->dlg_bytes);
    memset(in, 0, sizeof *in);
}

int ps_cleaner_run(ps_cleaner *c, const char *path, ps_clean_sink sink, void *user,
                   ps_error *err)
{
    if (!c->worker && ps_clean_worker_create(c, &c->worker))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    ps_input_ctx in;
    int rc = ps_input_open(c, &in, path, err);
    if (rc)
        return rc;
    ps_raw_record rec;
    ps_clean_item it;
    while ((rc = ps_input_next(c, &in, &rec, err)) == 1) {
        rc = ps_clean_record(c->worker, &in, &rec, &it, err);
        if (!rc && ps_cleaner_note_fields(c, in.path, &it))
            rc = ps_error_set(err, PS_ENOMEM, "out of memory");
        size_t part = rc ? SIZE_MAX : ps_cleaner_dedupe_part(c, &it);
        if (part != SIZE_MAX) /* split by a threaded run before: looked up here */
            rc = ps_cleaner_resolve(c, part, &it, err);
        if (!rc)
            rc = ps_cleaner_commit(c, in.path, &it, err);
        if (!rc && sink)
            rc = sink(user, &it.res);
        if (rc)
            break;
    }
    if (rc == 0)
        rc = ps_cleaner_check_fields(c, in.path, err);
    ps_input_close(c, &in);
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

int ps_cleaner_add_source(ps_cleaner *owner, const ps_clean_options *opts, const char *name,
                          ps_cleaner **out, ps_error *err)
{
    *out = NULL;
    ps_cleaner **ns = realloc(owner->sources, (owner->n_sources + 1) * sizeof *ns);
    if (!ns)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    owner->sources = ns;
    ps_cleaner *c;
    int rc = ps_cleaner_create(opts, &c, err);
    if (rc)
        return rc;
    size_t n = strlen(name);
    if (!(c->id_prefix = malloc(n + 2))) {
        ps_cleaner_free(c);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    memcpy(c->id_prefix, name, n);
    memcpy(c->id_prefix + n, "/", 2);
    c->id_prefix_len = n + 1;
    c->owner = owner;
    owner->sources[owner->n_sources++] = c;
    *out = c;
    return 0;
}

void ps_cleaner_sources_ready(ps_cleaner *owner)
{
    bool sql = false, dialogues = false;
    for (size_t i = 0; i < owner->n_sources; i++) {
        sql |= owner->sources[i]->schemas != NULL;
        dialogues |= owner->sources[i]->turns_path != NULL;
        owner->sources_sql |= ps_t2s_active(owner->sources[i]);
    }
    ps_stats_enable_text2sql(owner->stats, sql, dialogues);
}

int ps_cleaner_account_source(ps_cleaner *src, const char *input, const ps_clean_item *it,
                              ps_error *err)
{
    account_steps(src, it);
    const ps_clean_result *res = &it->res;
    ps_step_counts *st = ps_stats_steps(src->stats);
    st->label_conflicts += it->label_conflict;
    if (res->outcome == PS_OUTCOME_KEPT)
        st->changed_records += it->changed;
    if ((ps_t2s_active(src) &&
         ps_stats_sql(src->stats, res->id, it->sql_raw_class, it->sql_clean_class,
                      it->exec_status, it->exec_rows)) ||
        ps_stats_record_known(src->stats, input, res->outcome, res->reason, res->label,
                              PS_LABEL_NO_NONE, NULL))
        return ps_error_set(err, PS_ENOMEM, "out of memory in the accounting");
    return 0;
}
