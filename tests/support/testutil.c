/* Helpers shared by pairshard's cmocka tests (see testutil.h). */
#include "tests/support/testutil.h"

#include "tests/support/build_fixture.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *ps_test_data(const char *rel)
{
    static char path[4096];
    const char *root = getenv("PS_ROOT");
    snprintf(path, sizeof path, "%s/tests/data/%s", root && *root ? root : ".", rel);
    return path;
}

/* Where temporary files and directories go: $TMPDIR, else /tmp. */
static const char *tmp_base(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

char *ps_test_tmpfile(const void *data, size_t len, const char *suffix)
{
    size_t n = strlen(tmp_base()) + strlen(suffix) + 32;
    char *path = malloc(n);
    assert_non_null(path);
    snprintf(path, n, "%s/pstest-XXXXXX%s", tmp_base(), suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    assert_true(fd >= 0);
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        assert_true(w > 0);
        p += w;
        len -= (size_t)w;
    }
    close(fd);
    return path;
}

char *ps_test_tmpdir(const char *prefix)
{
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/%s-XXXXXX", tmp_base(), prefix);
    return mkdtemp(tmpl) ? strdup(tmpl) : NULL;
}

void ps_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        fail_msg("%s: cannot create", path);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

char *ps_test_root;
const char *ps_test_bin;

int ps_test_cli_setup(void **state)
{
    (void)state;
    ps_test_root = ps_test_tmpdir("ps-cli");
    ps_test_bin = ps_test_pairshard();
    return ps_test_root && ps_test_bin ? 0 : -1;
}

int ps_test_cli_teardown(void **state)
{
    (void)state;
    if (ps_test_root)
        ps_remove_tree(ps_test_root);
    free(ps_test_root);
    ps_test_root = NULL;
    return 0;
}

ps_preprocessor *ps_test_preprocessor(const char *dir)
{
    ps_preprocessor *p;
    ps_error err = {0};
    if (ps_preprocessor_open(dir, &p, &err))
        fail_msg("%s", err.message);
    return p;
}

void ps_test_read_rows(const char *dir, uint32_t sort_pool,
                       void (*row)(void *ctx, const ps_batch *b, uint32_t i), void *ctx)
{
    ps_reader_options o;
    ps_reader_options_init(&o);
    o.shuffle = 0;
    o.sort_pool = sort_pool;
    o.batch_size = 64;
    o.dtype = PS_DTYPE_INT32;
    o.rank = 0;
    o.world_size = 1;
    ps_reader *r;
    ps_error err = {0};
    if (ps_reader_open(dir, &o, NULL, &r, &err))
        fail_msg("%s", err.message);
    const ps_batch *b;
    int rc;
    while ((rc = ps_reader_next(r, &b, &err)) == 1) {
        for (uint32_t i = 0; i < b->B; i++)
            row(ctx, b, i);
        ps_batch_release(r, b);
    }
    if (rc < 0)
        fail_msg("%s", err.message);
    ps_reader_close(r);
}

const char *ps_test_pairshard(void)
{
    static char bin[4096];
    const char *env = getenv("PAIRSHARD");
    if (env) {
        snprintf(bin, sizeof bin, "%s", env);
        return bin;
    }
    ssize_t n = readlink("/proc/self/exe", bin, sizeof bin - 32);
    if (n <= 0)
        return NULL;
    bin[n] = '\0';
    char *slash = strrchr(bin, '/');
    if (!slash)
        return NULL;
    strcpy(slash, "/../bin/pairshard");
    return bin;
}

const char *ps_test_path(const char *dir, const char *rel)
{
    static char buf[4][4400];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, rel);
    return buf[k];
}

unsigned char *ps_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: cannot open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(n >= 0);
    unsigned char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

char *ps_test_pattern(size_t n)
{
    char *p = malloc(n ? n : 1);
    assert_non_null(p);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (char)x;
    }
    return p;
}

void ps_test_build(const char *in, const char *out, const ps_test_build_opts *o)
{
    ps_test_bert_build b;
    ps_test_bert_build_init(&b, in, out);
    ps_build_config *cfg = &b.cfg;
    cfg->clean.label_field = o->label_field;
    cfg->max_length = 128;
    cfg->shards = o->shards;
    cfg->block_records = o->block_records;
    if (o->buckets) {
        assert_true(o->n_buckets <= PS_BUILD_MAX_BUCKETS);
        memcpy(cfg->buckets, o->buckets, o->n_buckets * sizeof *o->buckets);
        cfg->n_buckets = o->n_buckets;
    }
    cfg->part_index = o->part_index;
    cfg->part_count = o->part_count;
    if (o->zstd_level)
        cfg->zstd_level = o->zstd_level;
    cfg->no_gate = o->no_gate;
    cfg->threads = 2;
    ps_build_summary sum;
    memset(&sum, 0, sizeof sum);
    ps_error err;
    ps_error_clear(&err);
    int rc = ps_build_run(cfg, &sum, &err);
    if (rc)
        fail_msg("build %s: %s", out, err.message);
    assert_false(sum.gate_failed);
    free(sum.report_summary);
    ps_test_bert_build_free(&b);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

int ps_test_collect(void *user, const ps_clean_result *r)
{
    ps_test_run *run = user;
    if (run->n == run->cap) {
        run->cap = run->cap ? run->cap * 2 : 64;
        run->v = realloc(run->v, run->cap * sizeof *run->v);
        assert_non_null(run->v);
    }
    ps_test_outcome *o = &run->v[run->n++];
    memset(o, 0, sizeof *o);
    o->outcome = r->outcome;
    o->id = dup_or_null(r->id);
    if (r->question) {
        o->question = malloc(r->question_len + 1);
        memcpy(o->question, r->question, r->question_len + 1);
        o->question_len = r->question_len;
    }
    if (r->sql) {
        o->sql = malloc(r->sql_len + 1);
        memcpy(o->sql, r->sql, r->sql_len + 1);
        o->sql_len = r->sql_len;
    }
    o->label = dup_or_null(r->label);
    o->reason = dup_or_null(r->reason);
    o->rule = dup_or_null(r->rule);
    o->detail = dup_or_null(r->detail);
    o->source = dup_or_null(r->source);
    o->duplicate_of = dup_or_null(r->duplicate_of);
    if (r->original) {
        o->original = malloc(r->original_len + 1);
        memcpy(o->original, r->original, r->original_len);
        o->original[r->original_len] = '\0';
        o->original_len = r->original_len;
    }
    if (r->outcome == PS_OUTCOME_KEPT)
        run->kept++;
    else if (r->outcome == PS_OUTCOME_REJECTED)
        run->rejected++;
    else
        run->duplicates++;
    return 0;
}

void ps_test_clean_file(ps_test_run *run, const char *path, const ps_clean_options *opts,
                        const char *rules_json)
{
    memset(run, 0, sizeof *run);
    ps_cleaner *c = NULL;
    assert_int_equal(ps_cleaner_create(opts, &c, &run->err), 0);
    if (rules_json)
        assert_int_equal(ps_cleaner_add_rules(c, rules_json, strlen(rules_json), "test", &run->err),
                         0);
    run->rc = ps_cleaner_run(c, path, ps_test_collect, run, &run->err);
    ps_cleaner_get_counts(c, &run->counts);
    run->stats_json = ps_cleaner_stats_json(c);
    assert_non_null(run->stats_json);
    /* Nothing is lost: every record has exactly one outcome. */
    assert_int_equal(run->counts.records_in,
                     run->counts.kept + run->counts.rejected + run->counts.duplicates);
    assert_int_equal(run->counts.records_in, run->n);
    assert_int_equal(run->counts.kept, run->kept);
    assert_int_equal(run->counts.rejected, run->rejected);
    assert_int_equal(run->counts.duplicates, run->duplicates);
    ps_cleaner_free(c);
}

void ps_test_clean_mem(ps_test_run *run, const void *data, size_t len, const char *suffix,
                       const ps_clean_options *opts, const char *rules_json)
{
    char *path = ps_test_tmpfile(data, len, suffix);
    ps_test_clean_file(run, path, opts, rules_json);
    unlink(path);
    free(path);
}

void ps_test_run_free(ps_test_run *run)
{
    for (size_t i = 0; i < run->n; i++) {
        ps_test_outcome *o = &run->v[i];
        free(o->id);
        free(o->question);
        free(o->sql);
        free(o->label);
        free(o->reason);
        free(o->rule);
        free(o->detail);
        free(o->source);
        free(o->duplicate_of);
        free(o->original);
    }
    free(run->v);
    free(run->stats_json);
    memset(run, 0, sizeof *run);
}

long ps_test_find_reason(const ps_test_run *run, const char *reason)
{
    for (size_t i = 0; i < run->n; i++)
        if (run->v[i].reason && strcmp(run->v[i].reason, reason) == 0)
            return (long)i;
    return -1;
}

ps_tokenizer *ps_test_bert_tokenizer(void)
{
    ps_error err;
    ps_error_clear(&err);
    ps_tokenizer_options opt;
    ps_tokenizer_options_init(&opt);
    ps_tokenizer *tok = NULL;
    int rc = ps_tokenizer_load_vocab(ps_test_data("vocab/bert-base-uncased.vocab.txt"), &opt, &tok,
                                     &err);
    if (rc)
        fail_msg("bert-base-uncased vocabulary: %s", err.message);
    return tok;
}

ps_schemas *ps_test_schemas(const char *rel, ...)
{
    ps_schemas *s;
    ps_error err = {0};
    assert_int_equal(ps_schemas_create(&s, &err), 0);
    va_list ap;
    va_start(ap, rel);
    for (const char *r = rel; r; r = va_arg(ap, const char *))
        if (ps_schemas_load_tables(s, ps_test_data(r), &err))
            fail_msg("%s: %s", r, err.message);
    va_end(ap);
    return s;
}

size_t ps_test_count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("%s: cannot be read", dir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
             !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}
