/*
 * Records into the leakage check (pipeline/leak_load.h): the cleaner reads
 * them, so every format and field option pairshard reads works the same
 * here; a shard set stores token ids, not the texts, so its manifest's
 * inputs are read again, each checked against the sha256 the set recorded.
 */
#include "pipeline/leak_load.h"
#include "ingest/ingest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void ps_leak_read_options(const ps_clean_options *in, ps_clean_options *out)
{
    *out = *in;
    out->keep_duplicates = 1;
    out->reject_invalid_sql = 0;
    out->execute = 0;
}

/* The inputs a shard set at `dir` was built from (NULL when `dir` is not a
 * directory), each checked against its recorded sha256. */
static int set_inputs(const char *dir, json_t **inputs, ps_leak_source *src, ps_error *err)
{
    *inputs = NULL;
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode))
        return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    int rc = ps_sha256_file(path, src->sha256, &src->bytes, err);
    if (rc)
        return ps_error_set(err, rc, "%s: not a shard set (%s)", dir, err->message);
    json_error_t je;
    json_t *m = json_load_file(path, 0, &je);
    json_t *in = json_object_get(m, "inputs");
    if (!json_is_array(in) || json_array_size(in) == 0) {
        json_decref(m);
        return ps_error_set(err, PS_EFORMAT, "%s: no 'inputs' to read the set's questions and "
                            "SQL from", path);
    }
    size_t i;
    json_t *e;
    json_array_foreach(in, i, e) {
        const char *p = json_string_value(json_object_get(e, "path"));
        const char *want = json_string_value(json_object_get(e, "sha256"));
        char hex[65];
        uint64_t bytes;
        rc = p ? ps_sha256_file(p, hex, &bytes, err)
               : ps_error_set(err, PS_EFORMAT, "%s: input %zu has no path", path, i);
        if (!rc && want && *want && strcmp(want, hex) != 0)
            rc = ps_error_set(err, PS_EFORMAT, "%s: input '%s' changed since the set was built "
                              "(sha256 %.12s..., the manifest records %.12s...)", dir, p, hex, want);
        if (rc) {
            json_decref(m);
            return rc;
        }
    }
    *inputs = json_incref(in);
    json_decref(m);
    src->is_set = 1;
    return 0;
}

typedef struct reader {
    const ps_leak_index *x;
    ps_leak_index *holdout_x; /* loading: the index records go into */
    unsigned holdout;
    ps_leak_tally *t;
    ps_leak_scratch *s;
    ps_leak_hits *hits;
    ps_leak_train_fn fn;
    void *user;
    ps_leak_source *src;
    ps_error *err;
} reader;

/* What a scan's workers mark a training record that shares something with
 * a held-out set (the reading's own outcome, never written anywhere): the
 * in-order sink finds only those again, so the comparisons of the other
 * records run on the workers. */
static const char LEAKED[] = "leaked";

/* A worker's scratch for the cleaner checks below, made on first use. */
typedef struct leak_worker {
    ps_leak_scratch *s;
    ps_leak_hits h;
} leak_worker;

static void leak_worker_free(void *p)
{
    leak_worker *w = p;
    ps_leak_scratch_free(w->s);
    free(w);
}

static int leak_worker_get(void **scratch, leak_worker **out, ps_error *err)
{
    leak_worker *w = *scratch;
    if (!w) {
        if (!(w = calloc(1, sizeof *w)) || ps_leak_scratch_create(&w->s)) {
            free(w);
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        }
        *scratch = w;
    }
    *out = w;
    return 0;
}

static int scan_check(void *user, void **scratch, const ps_clean_result *r, const char **reason,
                      char *detail, size_t dsz, ps_error *err)
{
    (void)dsz;
    leak_worker *w = NULL;
    ps_leak_text t = {r->id, r->question, r->sql, r->db_id};
    int rc = leak_worker_get(scratch, &w, err);
    rc = rc ? rc : ps_leak_find(user, w->s, &t, &w->h, err);
    *reason = !rc && w->h.kinds ? LEAKED : NULL;
    detail[0] = '\0';
    return rc;
}

/* --drop-leaked in a cleaner's workers (clean; the build has its own). */
static int drop_check(void *user, void **scratch, const ps_clean_result *r, const char **reason,
                      char *detail, size_t dsz, ps_error *err)
{
    leak_worker *w = NULL;
    ps_leak_text t = {r->id, r->question, r->sql, r->db_id};
    int k = -1;
    int rc = leak_worker_get(scratch, &w, err);
    rc = rc ? rc : ps_leak_check_record(user, w->s, &w->h, &t, &k, detail, dsz, err);
    *reason = !rc && k >= 0 ? ps_leak_reason((ps_leak_kind)k) : NULL;
    return rc;
}

int ps_leak_check_attach(const ps_leak_check *lc, ps_cleaner *cl, ps_error *err)
{
    int rc = ps_cleaner_read_database(cl, err);
    return rc ? rc : ps_cleaner_set_check(cl, drop_check, (void *)lc, leak_worker_free, err);
}

static int sink(void *user, const ps_clean_result *r)
{
    reader *rd = user;
    bool leaked = r->outcome == PS_OUTCOME_REJECTED && r->reason == LEAKED;
    if (r->outcome == PS_OUTCOME_REJECTED && !leaked) {
        rd->src->rejected++;
        return 0;
    }
    rd->src->records++;
    ps_leak_text t = {r->id, r->question, r->sql, r->db_id};
    if (rd->holdout_x)
        return ps_leak_index_add(rd->holdout_x, rd->holdout, &t, rd->err);
    int rc = 0;
    if (leaked)
        rc = ps_leak_find(rd->x, rd->s, &t, rd->hits, rd->err);
    else
        rd->hits->kinds = 0;
    rc = rc ? rc : ps_leak_tally_add(rd->t, &t, rd->hits, -1);
    return rc ? rc : rd->fn ? rd->fn(rd->user, &t, rd->hits) : 0;
}

/* Reads one input (the file, or each input of a set) through `rd`. */
static int read_all(const char *path, const ps_clean_options *opts, size_t threads, reader *rd,
                    ps_error *err)
{
    ps_leak_source *src = rd->src;
    memset(src, 0, sizeof *src);
    json_t *inputs = NULL;
    int rc = set_inputs(path, &inputs, src, err);
    if (!rc && !inputs)
        rc = ps_sha256_file(path, src->sha256, &src->bytes, err);
    if (rc)
        return rc;
    ps_clean_options o;
    ps_leak_read_options(opts, &o);
    ps_cleaner *cl = NULL;
    rc = ps_cleaner_create(&o, &cl, err);
    rc = rc ? rc : ps_cleaner_read_database(cl, err);
    if (!rc && rd->x) /* a scan: the workers compare */
        rc = ps_cleaner_set_check(cl, scan_check, (void *)rd->x, leak_worker_free, err);
    size_t n = inputs ? json_array_size(inputs) : 1;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *p = inputs ? json_string_value(json_object_get(json_array_get(inputs, i),
                                                                   "path"))
                               : path;
        rc = ps_cleaner_run_threads(cl, p, threads, sink, rd, err);
    }
    ps_cleaner_free(cl);
    json_decref(inputs);
    return rc;
}

int ps_leak_load_holdout(ps_leak_index *x, const char *path, const ps_clean_options *opts,
                         size_t threads, ps_leak_source *src, ps_error *err)
{
    unsigned h;
    int rc = ps_leak_index_add_holdout(x, path, &h, err);
    if (rc)
        return rc;
    reader rd = {.holdout_x = x, .holdout = h, .src = src, .err = err};
    return read_all(path, opts, threads, &rd, err);
}

int ps_leak_scan(const ps_leak_index *x, ps_leak_tally *t, const char *path,
                 const ps_clean_options *opts, size_t threads, ps_leak_train_fn fn, void *user,
                 ps_leak_source *src, ps_error *err)
{
    ps_leak_hits *hits = malloc(sizeof *hits);
    ps_leak_scratch *s = NULL;
    if (!hits || ps_leak_scratch_create(&s)) {
        free(hits);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    reader rd = {.x = x, .t = t, .s = s, .hits = hits, .fn = fn, .user = user, .src = src,
                 .err = err};
    int rc = read_all(path, opts, threads, &rd, err);
    ps_leak_scratch_free(s);
    free(hits);
    return rc;
}

void ps_leak_config_init(ps_leak_config *c)
{
    memset(c, 0, sizeof *c);
    ps_leak_options_init(&c->opts);
    ps_leak_limits_init(&c->limits);
}

int ps_leak_check_open(ps_leak_check *lc, const ps_leak_config *cfg,
                       const ps_clean_options *opts, size_t threads, ps_error *err)
{
    memset(lc, 0, sizeof *lc);
    lc->cfg = cfg;
    int rc = ps_leak_index_create(&cfg->opts, &lc->index, err);
    for (size_t i = 0; !rc && i < cfg->n_holdouts; i++)
        rc = ps_leak_load_holdout(lc->index, cfg->holdouts[i], opts, threads, &lc->src[i], err);
    rc = rc ? rc : ps_leak_index_finish(lc->index, err);
    if (!rc && ps_leak_tally_create(lc->index, &lc->tally))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    return rc;
}

void ps_leak_check_close(ps_leak_check *lc)
{
    ps_leak_tally_free(lc->tally);
    ps_leak_index_free(lc->index);
    lc->tally = NULL;
    lc->index = NULL;
}

int ps_leak_check_drop_kind(const ps_leak_check *lc, const ps_leak_hits *h)
{
    unsigned m = h->kinds & lc->cfg->drop_mask;
    for (int k = 0; k < PS_LEAK_KINDS; k++)
        if (m & (1u << k))
            return k;
    return -1;
}

bool ps_leak_check_failed(const ps_leak_check *lc)
{
    for (int k = 0; k < PS_LEAK_KINDS; k++)
        if (ps_leak_kind_fails(lc->tally, &lc->cfg->limits, (ps_leak_kind)k))
            return true;
    return false;
}

json_t *ps_leak_check_json(const ps_leak_check *lc)
{
    json_t *j = ps_leak_tally_json(lc->tally, &lc->cfg->limits);
    json_t *hs = json_object_get(j, "holdouts"), *h, *drop = json_array();
    size_t i;
    json_array_foreach(hs, i, h) {
        const ps_leak_source *s = &lc->src[i];
        json_object_set_new(h, "bytes", json_integer((json_int_t)s->bytes));
        json_object_set_new(h, "sha256", json_string(s->sha256));
        json_object_set_new(h, "shard_set", json_boolean(s->is_set));
        json_object_set_new(h, "unreadable", json_integer((json_int_t)s->rejected));
    }
    for (int k = 0; k < PS_LEAK_KINDS; k++)
        if (lc->cfg->drop_mask & (1u << k))
            json_array_append_new(drop, json_string(ps_leak_kind_name((ps_leak_kind)k)));
    json_object_set_new(j, "drop_leaked", drop);
    json_object_set_new(j, "passed", json_boolean(!ps_leak_check_failed(lc)));
    return j;
}

static const char *const REASON[PS_LEAK_KINDS] = {
    "leaked_database", "leaked_question", "leaked_near_question", "leaked_sql",
    "leaked_sql_template"};

const char *ps_leak_reason(ps_leak_kind k)
{
    return (unsigned)k < PS_LEAK_KINDS ? REASON[k] : NULL;
}

int ps_leak_check_record(const ps_leak_check *lc, ps_leak_scratch *s, ps_leak_hits *h,
                         const ps_leak_text *t, int *drop, char *detail, size_t dsz,
                         ps_error *err)
{
    *drop = -1;
    int rc = ps_leak_find(lc->index, s, t, h, err);
    if (rc)
        return rc;
    int k = ps_leak_check_drop_kind(lc, h);
    static const char *const WHAT[PS_LEAK_KINDS] = {"database", "question",
                                                    "question (a near duplicate)", "SQL",
                                                    "SQL template"};
    /* the first held-out set holding the match names it */
    for (unsigned ho = 0; k >= 0 && ho < ps_leak_index_holdouts(lc->index); ho++) {
        if (h->rec[k][ho] < 0)
            continue;
        ps_leak_text hr;
        ps_leak_index_record(lc->index, h->rec[k][ho], &hr);
        snprintf(detail, dsz, "shares its %s with held-out record %s of %s (--drop-leaked %s)",
                 WHAT[k], hr.id ? hr.id : "?", ps_leak_index_holdout_name(lc->index, ho),
                 ps_leak_kind_name((ps_leak_kind)k));
        *drop = k;
        break;
    }
    return 0;
}

int ps_leak_check_count(ps_leak_check *lc, ps_leak_scratch *s, ps_leak_hits *h,
                        const ps_leak_text *t, const char *reason, ps_error *err)
{
    int dropped = -1;
    for (int k = 0; reason && k < PS_LEAK_KINDS; k++)
        if (!strcmp(reason, REASON[k]))
            dropped = k;
    int rc = ps_leak_find(lc->index, s, t, h, err);
    if (!rc && ps_leak_tally_add(lc->tally, t, h, dropped))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    return rc;
}
