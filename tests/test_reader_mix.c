/* Weighted reading of a mixture (reader/plan_mix.c, reader/sources.c):
 * three sets built from Spider (dev, and two slices of train), joined by
 * `merge` into one set of three sources, read with weights 1, 2 and 0.5
 * over 2 ranks and 3 epochs. Per epoch: each source gives exactly
 * round(w * n) records, every record of the weight-1 source exactly once,
 * every record of the weight-2 source exactly twice, a subset of distinct
 * records of the weight-0.5 source (another one each epoch); both ranks
 * take the same number of steps; the same (seed, epoch) gives the same
 * batches; a reader resumed mid-epoch from a saved state delivers the very
 * batches the first one went on to deliver; a packed causal mixture keeps
 * the same counts. */
#include "tests/support/reader_fixture.h"

#include "pipeline/build.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dupstr(const char *s)
{
    char *d = strdup(s);
    assert_non_null(d);
    return d;
}

/* Batch digests in delivery order. */
typedef struct digs {
    uint64_t *v;
    size_t n, cap;
} digs;

static void digs_add(digs *d, const ps_batch *b)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 64;
        d->v = realloc(d->v, d->cap * sizeof *d->v);
        assert_non_null(d->v);
    }
    /* the records' sources too: a batch is its records and their sources */
    uint64_t h = batch_digest(b);
    for (uint32_t i = 0; i < (b->layout == PS_LAYOUT_PAIR ? b->B : b->n_segments); i++)
        h = h * 1000003u + (uint64_t)b->sources[i];
    d->v[d->n++] = h;
}

static char *g_sets[3]; /* the three sets, not joined */
static char *g_dir;   /* the joined set */
static char *g_gen;   /* a joined causal set */
static char *g_work;
/* the sets' directories are named spider, bird, sparc */
static size_t g_n[3]; /* records of each source */

/* Writes records [from, to) of Spider's train.json to path. */
static void write_slice(const char *path, size_t from, size_t to)
{
    json_error_t je;
    json_t *all = json_load_file(ps_test_data("spider/train.json"), 0, &je);
    assert_non_null(all);
    json_t *out = json_array();
    for (size_t i = from; i < to && i < json_array_size(all); i++)
        json_array_append(out, json_array_get(all, i));
    assert_int_equal(json_dump_file(out, path, 0), 0);
    json_decref(out);
    json_decref(all);
}

static void join(const char *out, const char *const *dirs, size_t n)
{
    ps_merge_opts mo = {.no_gate = 1};
    ps_error err;
    ps_error_clear(&err);
    if (ps_merge_run(out, dirs, n, &mo, &err))
        fail_msg("merge %s: %s", out, err.message);
}

static int setup(void **state)
{
    (void)state;
    g_work = reader_fixture_tmpdir("mix");
    char *slice_b = path_join(g_work, "b.json"), *slice_c = path_join(g_work, "c.json");
    write_slice(slice_b, 0, 700);
    write_slice(slice_c, 3000, 3461);
    char *a = path_join(g_work, "spider"), *b = path_join(g_work, "bird"),
         *c = path_join(g_work, "sparc");
    ps_test_build_opts o = {.label_field = "db_id", .shards = 2, .block_records = 16,
                            .no_gate = 1};
    ps_test_build(ps_test_data("spider/dev.json"), a, &o);
    o.shards = 1;
    ps_test_build(slice_b, b, &o);
    o.shards = 3;
    ps_test_build(slice_c, c, &o);
    const char *dirs[3] = {a, b, c};
    g_dir = path_join(g_work, "mix");
    join(g_dir, dirs, 3);
    /* the same as causal sets, for packing */
    char *ga = path_join(g_work, "gspider"), *gb = path_join(g_work, "gbird");
    build_gen_set(slice_b, ga, PS_LAYOUT_CAUSAL, "gpt2.tokenizer.json", 512, 2, 16, NULL);
    build_gen_set(slice_c, gb, PS_LAYOUT_CAUSAL, "gpt2.tokenizer.json", 512, 1, 16, NULL);
    const char *gdirs[2] = {ga, gb};
    g_gen = path_join(g_work, "gmix");
    join(g_gen, gdirs, 2);
    g_sets[0] = a, g_sets[1] = b, g_sets[2] = c;
    free(slice_b), free(slice_c), free(ga), free(gb);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_dir);
    free(g_gen);
    for (int i = 0; i < 3; i++)
        free(g_sets[i]);
    free(g_work);
    return 0;
}

static const char *const NAMES[3] = {"spider", "bird", "sparc"};
static const double WEIGHTS[3] = {1.0, 2.0, 0.5};

static void mix_opts(ps_reader_options *o, int rank, uint64_t epoch)
{
    ps_reader_options_init(o);
    o->batch_size = 16;
    o->rank = rank;
    o->world_size = 2;
    o->seed = 7;
    o->epoch = epoch;
    o->n_weights = 3;
    o->weight_names = NAMES;
    o->weights = WEIGHTS;
}

/* One record's identity: "source/id". */
typedef struct seen {
    char **key;
    size_t n, cap;
    uint64_t per_source[3];
} seen;

/* The batch's records: rows (pair) or segments. */
static uint32_t n_recs(const ps_batch *b)
{
    return b->layout == PS_LAYOUT_PAIR ? b->B : b->n_segments;
}

static void seen_add(seen *s, const ps_reader *r, const ps_batch *b)
{
    for (uint32_t i = 0; i < n_recs(b); i++) {
        int32_t src = b->sources[i];
        assert_true(src >= 0 && src < 3);
        s->per_source[src]++;
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 1024;
            s->key = realloc(s->key, s->cap * sizeof *s->key);
            assert_non_null(s->key);
        }
        char k[600];
        snprintf(k, sizeof k, "%s/%s", ps_reader_get_source(r, (uint32_t)src), b->ids[i]);
        s->key[s->n++] = dupstr(k);
    }
}

static void seen_free(seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->key[i]);
    free(s->key);
    memset(s, 0, sizeof *s);
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* How many times each key of source `name` was seen: all must be `times`
 * (0 for any: distinct); returns the distinct keys of that source. */
static size_t count_each(seen *s, const char *name, unsigned times)
{
    qsort(s->key, s->n, sizeof *s->key, cmp_key);
    size_t distinct = 0, pre = strlen(name);
    for (size_t i = 0; i < s->n;) {
        size_t j = i;
        while (j < s->n && !strcmp(s->key[j], s->key[i]))
            j++;
        if (!strncmp(s->key[i], name, pre) && s->key[i][pre] == '/') {
            distinct++;
            if ((times && j - i != times) || (!times && j - i != 1))
                fail_msg("%s seen %zu times, expected %u", s->key[i], j - i, times ? times : 1);
        }
        i = j;
    }
    return distinct;
}

/* Every batch of one rank's epoch into *s; returns the steps. */
static uint64_t read_epoch(const char *dir, const ps_reader_options *o, seen *s, digs *rn)
{
    ps_reader *r = open_ok(dir, o, NULL);
    uint64_t steps = 0;
    const ps_batch *b;
    ps_error err;
    int rc;
    while ((rc = ps_reader_next(r, &b, &err)) == 1) {
        seen_add(s, r, b);
        if (rn)
            digs_add(rn, b);
        steps++;
        ps_batch_release(r, b);
    }
    assert_int_equal(rc, 0);
    ps_reader_close(r);
    return steps;
}

static void test_sources_named(void **state)
{
    (void)state;
    ps_reader_options o;
    mix_opts(&o, 0, 0);
    ps_reader_info info;
    ps_reader *r = open_info(g_dir, &o, &info);
    assert_int_equal(info.n_sources, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_string_equal(ps_reader_get_source(r, i), NAMES[i]);
        g_n[i] = ps_reader_get_source_records(r, i);
        assert_true(g_n[i] > 100);
    }
    assert_null(ps_reader_get_source(r, 3));
    ps_reader_close(r);
}

static void test_counts_over_ranks_and_epochs(void **state)
{
    (void)state;
    char *first_c = NULL;
    for (uint64_t e = 0; e < 3; e++) {
        seen s = {0};
        uint64_t steps[2];
        for (int rank = 0; rank < 2; rank++) {
            ps_reader_options o;
            mix_opts(&o, rank, e);
            steps[rank] = read_epoch(g_dir, &o, &s, NULL);
        }
        assert_int_equal(steps[0], steps[1]);
        assert_true(steps[0] > 0);
        uint64_t want_c = (uint64_t)(0.5 * (double)g_n[2] + 0.5);
        assert_int_equal(s.per_source[0], g_n[0]);
        assert_int_equal(s.per_source[1], 2 * g_n[1]);
        assert_int_equal(s.per_source[2], want_c);
        assert_int_equal(count_each(&s, "spider", 1), g_n[0]);
        assert_int_equal(count_each(&s, "bird", 2), g_n[1]);
        assert_int_equal(count_each(&s, "sparc", 0), want_c);
        /* another subset each epoch: the first sparc key after sorting */
        size_t k = 0;
        while (k < s.n && strncmp(s.key[k], "sparc/", 6))
            k++;
        if (e == 0)
            first_c = dupstr(s.key[k]);
        seen_free(&s);
    }
    free(first_c);
}

static void test_subsets_differ_by_epoch(void **state)
{
    (void)state;
    seen s0 = {0}, s1 = {0};
    for (int rank = 0; rank < 2; rank++) {
        ps_reader_options o;
        mix_opts(&o, rank, 0);
        read_epoch(g_dir, &o, &s0, NULL);
        mix_opts(&o, rank, 1);
        read_epoch(g_dir, &o, &s1, NULL);
    }
    qsort(s0.key, s0.n, sizeof *s0.key, cmp_key);
    qsort(s1.key, s1.n, sizeof *s1.key, cmp_key);
    size_t diff = 0;
    for (size_t i = 0; i < s0.n && i < s1.n; i++)
        diff += strcmp(s0.key[i], s1.key[i]) != 0;
    assert_true(diff > 0); /* the half of sparc changes */
    seen_free(&s0);
    seen_free(&s1);
}

static void test_deterministic_and_resumable(void **state)
{
    (void)state;
    ps_reader_options o;
    mix_opts(&o, 1, 2);
    digs a = {0}, b = {0}, c = {0};
    seen s = {0};
    read_epoch(g_dir, &o, &s, &a);
    read_epoch(g_dir, &o, &s, &b);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.v, b.v, a.n * sizeof *a.v);
    /* stop after k batches, save, resume: the rest is the same */
    size_t k = a.n / 3;
    ps_reader *r = open_ok(g_dir, &o, NULL);
    const ps_batch *bt;
    ps_error err;
    for (size_t i = 0; i < k; i++) {
        assert_int_equal(ps_reader_next(r, &bt, &err), 1);
        ps_batch_release(r, bt);
    }
    ps_reader_state st;
    assert_int_equal(ps_reader_get_state(r, &st), 0);
    ps_reader_close(r);
    r = open_ok(g_dir, &o, &st);
    int rc;
    while ((rc = ps_reader_next(r, &bt, &err)) == 1) {
        digs_add(&c, bt);
        ps_batch_release(r, bt);
    }
    assert_int_equal(rc, 0);
    ps_reader_close(r);
    assert_int_equal(c.n, a.n - k);
    assert_memory_equal(a.v + k, c.v, c.n * sizeof *c.v);
    /* other weights: the state does not resume them */
    static const double other[3] = {1.0, 2.0, 0.25};
    o.weights = other;
    ps_reader *r2 = NULL;
    ps_error_clear(&err);
    assert_int_equal(ps_reader_open(g_dir, &o, &st, &r2, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "cannot reproduce"));
    assert_null(r2);
    free(a.v);
    free(b.v);
    free(c.v);
    seen_free(&s);
}

static void test_bad_weights(void **state)
{
    (void)state;
    ps_reader_options o;
    mix_opts(&o, 0, 0);
    static const char *const bad_name[1] = {"cosql"};
    static const double one[1] = {1.0}, neg[1] = {-1.0};
    o.n_weights = 1;
    o.weight_names = bad_name;
    o.weights = one;
    ps_reader *r = NULL;
    ps_error err;
    assert_int_equal(open_rc(g_dir, &o, &r, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "no source named \"cosql\""));
    assert_non_null(strstr(err.message, "spider, bird, sparc"));
    o.weight_names = NAMES;
    o.weights = neg;
    assert_int_equal(open_rc(g_dir, &o, &r, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "weight -1"));
}

/* One reader over several epochs (set_epoch): the subsets change the
 * buckets' counts from epoch to epoch, and the counts per source hold in
 * each (the buffers sized at open take any epoch's pools). */
static void test_set_epoch(void **state)
{
    (void)state;
    static const double w[3] = {0.3, 1.7, 0.5};
    ps_reader_options o;
    mix_opts(&o, 0, 0);
    o.world_size = 1;
    o.batch_size = 64;
    o.sort_pool = 16;
    o.weights = w;
    ps_reader *r = open_ok(g_dir, &o, NULL);
    for (uint64_t e = 0; e < 4; e++) {
        ps_error err;
        assert_int_equal(ps_reader_set_epoch(r, e, &err), 0);
        uint64_t n[3] = {0, 0, 0};
        const ps_batch *b;
        while (ps_reader_next(r, &b, &err) == 1) {
            for (uint32_t i = 0; i < b->B; i++)
                n[b->sources[i]]++;
            ps_batch_release(r, b);
        }
        for (int k = 0; k < 3; k++)
            assert_int_equal(n[k], (uint64_t)(w[k] * (double)g_n[k] + 0.5));
    }
    ps_reader_close(r);
}

/* Packing across sources: rows mix both sets' records, counts hold. */
static void test_packed_mixture(void **state)
{
    (void)state;
    static const char *const gn[2] = {"gspider", "gbird"};
    static const double gw[2] = {1.5, 1.0};
    seen s = {0};
    uint64_t steps[2], n[2];
    int mixed_rows = 0;
    for (int rank = 0; rank < 2; rank++) {
        ps_reader_options o;
        ps_reader_options_init(&o);
        o.rank = rank;
        o.world_size = 2;
        o.batch_size = 4;
        o.pack = 512;
        o.n_weights = 2;
        o.weight_names = gn;
        o.weights = gw;
        ps_reader *r = open_ok(g_gen, &o, NULL);
        n[0] = ps_reader_get_source_records(r, 0);
        n[1] = ps_reader_get_source_records(r, 1);
        const ps_batch *b;
        ps_error err;
        steps[rank] = 0;
        while (ps_reader_next(r, &b, &err) == 1) {
            seen_add(&s, r, b);
            const int64_t *rows = b->seg_rows;
            for (uint32_t i = 1; i < b->n_segments; i++)
                mixed_rows += rows[i] == rows[i - 1] && b->sources[i] != b->sources[i - 1];
            steps[rank]++;
            ps_batch_release(r, b);
        }
        ps_reader_close(r);
    }
    assert_int_equal(steps[0], steps[1]);
    assert_int_equal(s.per_source[0], (uint64_t)(1.5 * (double)n[0] + 0.5));
    assert_int_equal(s.per_source[1], n[1]);
    assert_int_equal(count_each(&s, "gbird", 1), n[1]);
    assert_true(mixed_rows > 0);
    seen_free(&s);
}

/* "id" -> label name over one reader's epoch (rank 0 of 1). */
typedef struct lab {
    char **id, **name;
    size_t n;
} lab;

static void labels_of(ps_reader *r, lab *out)
{
    const ps_batch *b;
    ps_error err;
    while (ps_reader_next(r, &b, &err) == 1) {
        const int64_t *l = b->labels;
        for (uint32_t i = 0; i < b->B; i++) {
            out->id = realloc(out->id, (out->n + 1) * sizeof *out->id);
            out->name = realloc(out->name, (out->n + 1) * sizeof *out->name);
            char k[600];
            snprintf(k, sizeof k, "%s/%s", ps_reader_get_source(r, (uint32_t)b->sources[i]),
                     b->ids[i]);
            out->id[out->n] = dupstr(k);
            out->name[out->n++] = dupstr(l[i] < 0 ? "-" : ps_reader_get_label(r, (uint32_t)l[i]));
        }
        ps_batch_release(r, b);
    }
}

static const char *lab_find(const lab *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->id[i], id))
            return l->name[i];
    return NULL;
}

static void lab_free(lab *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->id[i]), free(l->name[i]);
    free(l->id);
    free(l->name);
}

/* The three sets read as one, without joining them: the same counts as
 * the joined set, and every record's label is the one its own set gives. */
static void test_several_sets(void **state)
{
    (void)state;
    seen s = {0};
    uint64_t steps[2];
    for (int rank = 0; rank < 2; rank++) {
        ps_reader_options o;
        mix_opts(&o, rank, 1);
        ps_reader *r = NULL;
        ps_error err;
        ps_error_clear(&err);
        if (ps_reader_open_sets((const char *const *)g_sets, 3, &o, NULL, &r, &err))
            fail_msg("open_sets: %s", err.message);
        const ps_batch *b;
        steps[rank] = 0;
        while (ps_reader_next(r, &b, &err) == 1) {
            seen_add(&s, r, b);
            steps[rank]++;
            ps_batch_release(r, b);
        }
        ps_reader_close(r);
    }
    assert_int_equal(steps[0], steps[1]);
    assert_int_equal(s.per_source[0], g_n[0]);
    assert_int_equal(s.per_source[1], 2 * g_n[1]);
    assert_int_equal(s.per_source[2], (uint64_t)(0.5 * (double)g_n[2] + 0.5));
    assert_int_equal(count_each(&s, "spider", 1), g_n[0]);
    assert_int_equal(count_each(&s, "bird", 2), g_n[1]);
    seen_free(&s);
    /* labels: united by name */
    ps_reader_options o;
    ps_reader_options_init(&o);
    o.rank = 0;
    o.world_size = 1;
    lab all = {0}, own = {0};
    ps_reader *r = NULL;
    ps_error err;
    assert_int_equal(ps_reader_open_sets((const char *const *)g_sets, 3, &o, NULL, &r, &err), 0);
    labels_of(r, &all);
    ps_reader_close(r);
    for (int i = 0; i < 3; i++) {
        r = open_ok(g_sets[i], &o, NULL);
        labels_of(r, &own);
        ps_reader_close(r);
    }
    assert_int_equal(all.n, own.n);
    size_t labelled = 0;
    for (size_t i = 0; i < all.n; i++) {
        const char *want = lab_find(&own, all.id[i]);
        assert_non_null(want);
        assert_string_equal(all.name[i], want);
        labelled += strcmp(want, "-") != 0;
    }
    assert_true(labelled > all.n / 2);
    lab_free(&all);
    lab_free(&own);
    /* another layout (and tokenizer): refused, naming both */
    const char *bad[2] = {g_sets[0], g_gen};
    ps_error_clear(&err);
    assert_int_equal(ps_reader_open_sets(bad, 2, &o, NULL, &r, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, g_sets[0]));
    assert_non_null(strstr(err.message, g_gen));
    assert_null(r);
    /* two sources of one name */
    const char *twice[2] = {g_sets[0], g_sets[0]};
    assert_int_equal(ps_reader_open_sets(twice, 2, &o, NULL, &r, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "both hold a source named \"spider\""));
}

/* The joined set verifies (its sources database against every block and
 * the manifest); a manifest whose per-source counts are edited does not. */
static void test_joined_set_verifies(void **state)
{
    (void)state;
    ps_manifest *m = NULL;
    ps_verify_report rep;
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_manifest_read(g_dir, &m, &err), 0);
    assert_int_equal(m->n_sources, 3);
    if (ps_set_verify(g_dir, m, &rep, &err))
        fail_msg("verify: %s", err.message);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(rep.source_records[i], g_n[i]);
    ps_verify_report_free(&rep);
    m->source_counts[1].records--;
    m->source_counts[2].records++;
    assert_int_equal(ps_set_verify(g_dir, m, &rep, &err), PS_ECORRUPT);
    assert_string_equal(rep.kind, "sources_db");
    assert_non_null(strstr(err.message, "sources[1] (\"bird\")"));
    ps_verify_report_free(&rep);
    /* a manifest that lists no sources for shards that hold them */
    m->n_sources = 0;
    assert_int_equal(ps_set_verify(g_dir, m, &rep, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.message, "a sources database, but the manifest lists no sources"));
    ps_verify_report_free(&rep);
    m->n_sources = 3;
    ps_manifest_free(m);
    /* the reader: a manifest listing fewer sources than the shards use */
    char *bad = path_join(g_work, "fewer"), cmd[8300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", bad, g_dir, bad);
    assert_int_equal(system(cmd), 0);
    char *mpath = path_join(bad, "manifest.json");
    json_error_t je;
    json_t *root = json_load_file(mpath, 0, &je);
    assert_non_null(root);
    json_array_remove(json_object_get(root, "sources"), 2);
    assert_int_equal(json_dump_file(root, mpath, JSON_INDENT(2)), 0);
    json_decref(root);
    ps_reader_options o;
    ps_reader_options_init(&o);
    o.rank = 0;
    o.world_size = 1;
    ps_reader *r = NULL;
    assert_int_equal(open_rc(bad, &o, &r, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.message, "has source 2, the manifest lists 2"));
    assert_null(r);
    free(mpath);
    free(bad);
}

/* Joining sets whose sources share a name: refused, unless renamed. */
static void test_join_names(void **state)
{
    (void)state;
    const char *twice[2] = {g_sets[1], g_sets[1]};
    char *out = path_join(g_work, "twice");
    ps_merge_opts mo = {.no_gate = 1};
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_merge_run(out, twice, 2, &mo, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "both hold a source named \"bird\""));
    assert_int_not_equal(access(out, F_OK), 0); /* nothing published */
    static const char *const from[1] = {"bird"}, *const to[1] = {"bird2"};
    mo.rename_from = from;
    mo.rename_to = to;
    mo.n_rename = 1;
    if (ps_merge_run(out, twice, 2, &mo, &err))
        fail_msg("merge --rename: %s", err.message);
    ps_manifest *m = NULL;
    assert_int_equal(ps_manifest_read(out, &m, &err), 0);
    assert_int_equal(m->n_sources, 2);
    assert_string_equal(m->source_names[0], "bird");
    assert_string_equal(m->source_names[1], "bird2");
    assert_int_equal(m->source_counts[0].records, g_n[1]);
    ps_manifest_free(m);
    /* a joined set joins again: its sources keep their names, after the new set's */
    const char *again[2] = {g_sets[0], out};
    char *out2 = path_join(g_work, "again");
    static const char *const from2[1] = {"spider"}, *const to2[1] = {"spider_dev"};
    mo.rename_from = from2;
    mo.rename_to = to2;
    if (ps_merge_run(out2, again, 2, &mo, &err))
        fail_msg("merge of a joined set: %s", err.message);
    assert_int_equal(ps_manifest_read(out2, &m, &err), 0);
    assert_int_equal(m->n_sources, 3);
    assert_string_equal(m->source_names[0], "spider_dev");
    assert_string_equal(m->source_names[2], "bird2");
    ps_verify_report rep;
    if (ps_set_verify(out2, m, &rep, &err))
        fail_msg("verify: %s", err.message);
    assert_int_equal(rep.source_records[1], g_n[1]);
    ps_verify_report_free(&rep);
    ps_manifest_free(m);
    free(out);
    free(out2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sources_named),
        cmocka_unit_test(test_counts_over_ranks_and_epochs),
        cmocka_unit_test(test_subsets_differ_by_epoch),
        cmocka_unit_test(test_deterministic_and_resumable),
        cmocka_unit_test(test_bad_weights),
        cmocka_unit_test(test_packed_mixture),
        cmocka_unit_test(test_set_epoch),
        cmocka_unit_test(test_several_sets),
        cmocka_unit_test(test_joined_set_verifies),
        cmocka_unit_test(test_join_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
