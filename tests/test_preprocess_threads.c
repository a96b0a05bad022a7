/* One ps_preprocessor shared by many threads (pairshard/preprocess.h):
 * on sets built by the CLI from Spider dev on every layout and tokenizer
 * kind (pair with a BERT vocabulary, question alone and under picard with
 * its schema; causal with the Llama-3-style and GPT-2 tokenizer.json, a
 * ddl schema prompt shortened to fit; seq2seq with T5's Unigram), every
 * record is served once serially — as a raw record, as fields with SQL
 * and as the question alone, in turn, and its question cleaned alone
 * (ps_preprocessor_clean) — and then by 8 threads at once on the same
 * preprocessor, each going round the records from its own place twice:
 * each thread's every result (return code, rejection, ids, token types,
 * mask, prompt, cleaned text) must equal the serial one while that thread
 * reads it, whatever the other threads do. Then threads that start, serve
 * a few records and end, in waves, and threads that give their scratch
 * back after every call (ps_preprocessor_release): the same results, and
 * the pool holds no more scratch sets than threads held at once.
 * PS_TEST_THREADS sets the thread count (8). Run under ThreadSanitizer by
 * `make check-tsan`. */
#include "tests/support/testutil.h"

#include "pipeline/preprocess_priv.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

/* What one record gives when served alone: the reference. */
typedef struct want {
    int rc, rejected;
    char *reason, *prompt, *clean, *clean_reason;
    int32_t *ids;
    uint8_t *types;
    size_t len;
} want;

typedef struct set {
    ps_preprocessor *p;
    size_t n;
    ps_preprocess_input *in;
    char **raw;
    want *want;
    size_t clean_every;      /* ps_preprocessor_clean on 1 record in this many */
    atomic_size_t calls, bad;
    char first_bad[512];
    atomic_flag told;
} set;

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* Spider dev's records as inputs: record i raw (i % 3 == 0), as fields
 * with its SQL (1), or its question alone, as at serving (2). */
static void load_inputs(set *s)
{
    json_t *arr = json_load_file(ps_test_data("spider/dev.json"), 0, NULL);
    assert_non_null(arr);
    s->n = json_array_size(arr);
    s->in = calloc(s->n, sizeof *s->in);
    s->raw = calloc(s->n, sizeof *s->raw);
    s->want = calloc(s->n, sizeof *s->want);
    assert_true(s->in && s->raw && s->want);
    for (size_t i = 0; i < s->n; i++) {
        json_t *r = json_array_get(arr, i);
        ps_preprocess_input *in = &s->in[i];
        if (i % 3 == 0) {
            s->raw[i] = json_dumps(r, JSON_COMPACT);
            in->record = s->raw[i];
            in->record_len = strlen(s->raw[i]);
        }
        /* kept for the cleaning call too */
        in->question = strdup(json_string_value(json_object_get(r, "question")));
        in->db_id = strdup(json_string_value(json_object_get(r, "db_id")));
        if (i % 3 == 1)
            in->sql = strdup(json_string_value(json_object_get(r, "query")));
    }
    json_decref(arr);
}

static void record_want(set *s, size_t i)
{
    ps_preprocess_output o;
    ps_error err = {0};
    want *w = &s->want[i];
    w->rc = ps_preprocess(s->p, &s->in[i], &o, &err);
    if (!w->rc && o.rejected) {
        w->rejected = 1;
        w->reason = strdup(o.reason);
    } else if (!w->rc) {
        w->len = o.length;
        w->ids = malloc(o.length * sizeof *w->ids + 1);
        w->types = malloc(o.length + 1);
        memcpy(w->ids, o.input_ids, o.length * sizeof *w->ids);
        memcpy(w->types, o.token_type_ids, o.length);
        w->prompt = o.prompt ? strndup(o.prompt, o.prompt_len) : NULL;
    }
    if (i % s->clean_every == 0) {
        const char *out, *reason;
        size_t len;
        assert_int_equal(ps_preprocessor_clean(s->p, "question", s->in[i].question,
                                               strlen(s->in[i].question), &out, &len, &reason,
                                               &err), 0);
        w->clean = out ? strndup(out, len) : NULL;
        w->clean_reason = dup_or_null(reason);
    }
}

static bool same_str(const char *a, const char *b, size_t blen)
{
    return a ? b && strlen(a) == blen && memcmp(a, b, blen) == 0 : !b;
}

/* Record i served on this thread: as the reference, or why not. */
static const char *check_one(set *s, size_t i)
{
    const want *w = &s->want[i];
    ps_preprocess_output o;
    ps_error err = {0};
    int rc = ps_preprocess(s->p, &s->in[i], &o, &err);
    if (rc != w->rc)
        return "another return code";
    if (rc)
        return NULL;
    if (o.rejected != w->rejected)
        return o.rejected ? "rejected, the serial call kept it" : "kept, the serial call rejected it";
    if (o.rejected)
        return strcmp(o.reason, w->reason) ? "another rejection reason" : NULL;
    if (o.length != w->len || memcmp(o.input_ids, w->ids, w->len * sizeof *w->ids))
        return "other ids";
    if (memcmp(o.token_type_ids, w->types, w->len))
        return "other token types";
    for (size_t k = 0; k < o.length; k++)
        if (o.attention_mask[k] != 1)
            return "a mask that is not all ones";
    if (!same_str(w->prompt, o.prompt, o.prompt_len))
        return "another prompt";
    /* the ids must still be this call's after the work above */
    if (memcmp(o.input_ids, w->ids, w->len * sizeof *w->ids))
        return "ids changed while read";
    if (i % s->clean_every)
        return NULL;
    const char *out, *reason;
    size_t len;
    if (ps_preprocessor_clean(s->p, "question", s->in[i].question, strlen(s->in[i].question),
                              &out, &len, &reason, &err))
        return "the cleaning failed";
    if (!same_str(w->clean, out, len) || !same_str(w->clean_reason, reason,
                                                    reason ? strlen(reason) : 0))
        return "another cleaned text";
    return NULL;
}

static void tell(set *s, size_t i, const char *why)
{
    atomic_fetch_add(&s->bad, 1);
    if (!atomic_flag_test_and_set(&s->told))
        snprintf(s->first_bad, sizeof s->first_bad, "record %zu (\"%.60s\"): %s", i,
                 s->in[i].question, why);
}

typedef struct worker {
    set *s;
    size_t start, count, release_every;
} worker;

/* `count` records from `start` on (round the set). */
static void *serve(void *arg)
{
    worker *k = arg;
    set *s = k->s;
    for (size_t j = 0; j < k->count; j++) {
        size_t i = (k->start + j) % s->n;
        const char *why = check_one(s, i);
        if (why)
            tell(s, i, why);
        atomic_fetch_add(&s->calls, 1);
        if (k->release_every && j % k->release_every == 0)
            ps_preprocessor_release(s->p);
    }
    return NULL;
}

static size_t n_threads(void)
{
    const char *e = getenv("PS_TEST_THREADS");
    long t = e ? atol(e) : 8;
    return t > 0 && t <= 256 ? (size_t)t : 8;
}

/* T threads at once, each `count` records from its own place. */
static void run_threads(set *s, size_t T, size_t count, size_t release_every)
{
    pthread_t *th = calloc(T, sizeof *th);
    worker *k = calloc(T, sizeof *k);
    assert_true(th && k);
    for (size_t t = 0; t < T; t++) {
        k[t] = (worker){s, t * s->n / T, count, release_every};
        assert_int_equal(pthread_create(&th[t], NULL, serve, &k[t]), 0);
    }
    for (size_t t = 0; t < T; t++)
        pthread_join(th[t], NULL);
    free(th);
    free(k);
}

static void set_free(set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        want *w = &s->want[i];
        free(w->reason);
        free(w->prompt);
        free(w->clean);
        free(w->clean_reason);
        free(w->ids);
        free(w->types);
        free(s->raw[i]);
        free((char *)s->in[i].question);
        free((char *)s->in[i].db_id);
        free((char *)s->in[i].sql);
    }
    free(s->in);
    free(s->raw);
    free(s->want);
    ps_preprocessor_free(s->p);
}

static const char *build(const char *name, const char *opts)
{
    static char dir[512];
    char cmd[8192];
    snprintf(dir, sizeof dir, "%s/%s", ps_test_root, name);
    snprintf(cmd, sizeof cmd, "'%s' build -q --threads 2 --no-gate %s -o '%s' '%s'", ps_test_bin,
             opts, dir, ps_test_data("spider/dev.json"));
    sh(cmd);
    return dir;
}

/* Set `name` built with `opts` and opened, every record served serially
 * (the reference). Returns how many were kept. */
static size_t set_open(set *s, const char *name, const char *opts, size_t clean_every)
{
    memset(s, 0, sizeof *s);
    s->clean_every = clean_every;
    atomic_flag_clear(&s->told);
    s->p = ps_test_preprocessor(build(name, opts));
    load_inputs(s);
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        record_want(s, i);
        if (s->want[i].rc)
            fail_msg("%s: record %zu fails serially (%d)", name, i, s->want[i].rc);
        kept += !s->want[i].rejected;
    }
    assert_true(kept > s->n / 2); /* not a set of rejections */
    return kept;
}

/* The set `name`, built with tokenizer option `tok_opt` naming `tok`
 * (under tests/data), Spider's schemas when `schema`, and `opts`, served
 * serially then by threads. */
static void shared(const char *name, const char *tok_opt, const char *tok, bool schema,
                   const char *opts)
{
    char tok_path[1024], all[4096];
    snprintf(tok_path, sizeof tok_path, "%s", ps_test_data(tok));
    snprintf(all, sizeof all, "%s '%s' %s%s%s %s", tok_opt, tok_path, schema ? "--schema '" : "",
             schema ? ps_test_data("spider/tables.json") : "", schema ? "'" : "", opts);
    set s;
    size_t kept = set_open(&s, name, all, 4), rejected = s.n - kept;
    size_t T = n_threads();
    run_threads(&s, T, 2 * s.n, 0);
    size_t bad = atomic_load(&s.bad), calls = atomic_load(&s.calls);
    print_message("# %s: %zu kept, %zu rejected serially; %zu threads, %zu calls, %zu results "
                  "other than serial, %zu scratch sets\n", name, kept, rejected, T, calls, bad,
                  ps_pp_pool_slots(s.p));
    if (bad)
        fail_msg("%s: %zu of %zu results by %zu threads differ from the serial ones; first: %s",
                 name, bad, calls, T, s.first_bad);
    assert_int_equal(calls, T * 2 * s.n);
    /* one scratch set for the serial calls (this thread keeps it), one a
     * thread */
    assert_true(ps_pp_pool_slots(s.p) <= T + 1);
    set_free(&s);
}

static void test_pair_bert(void **state)
{
    (void)state;
    shared("pair-bert", "--vocab", "vocab/bert-base-uncased.vocab.txt", false, "");
}

static void test_picard_bert(void **state)
{
    (void)state;
    shared("picard-bert", "--vocab", "vocab/bert-base-uncased.vocab.txt", true,
           "--template picard --max-length 512");
}

static void test_causal_llama3(void **state)
{
    (void)state;
    /* 400 tokens: the ddl schemas of the larger databases shortened to fit */
    shared("causal-llama3", "--tokenizer-json", "tokenizers/llama3-style.tokenizer.json", true,
           "--layout causal --template ddl --max-length 400");
}

static void test_causal_gpt2(void **state)
{
    (void)state;
    shared("causal-gpt2", "--tokenizer-json", "tokenizers/gpt2.tokenizer.json", true,
           "--layout causal --template picard --max-length 512");
}

static void test_seq2seq_t5(void **state)
{
    (void)state;
    shared("seq2seq-t5", "--tokenizer-json", "tokenizers/t5-small.tokenizer.json", true,
           "--layout seq2seq --template picard --max-length 512 --max-target-length 160");
}

/* Threads that live for a few records, in waves of 4, and threads that
 * release their scratch after every call: the same results, and the pool
 * reuses what ended threads gave back. */
static void test_short_lived_threads(void **state)
{
    (void)state;
    char vocab[1024], full[4096];
    snprintf(vocab, sizeof vocab, "%s", ps_test_data("vocab/bert-base-uncased.vocab.txt"));
    snprintf(full, sizeof full, "--vocab '%s' --schema '%s' --template picard", vocab,
             ps_test_data("spider/tables.json"));
    set s;
    set_open(&s, "short-lived", full, 5);
    ps_preprocessor_release(s.p); /* this thread's back to the pool */
    ps_preprocessor_release(s.p); /* holding none: a no-op */
    assert_int_equal(ps_pp_pool_slots(s.p), 1);
    for (size_t wave = 0; wave < 40; wave++)
        run_threads(&s, 4, 25, 0);
    size_t after_waves = ps_pp_pool_slots(s.p);
    run_threads(&s, 6, 200, 1);
    size_t bad = atomic_load(&s.bad);
    print_message("# short-lived threads: %zu calls by 166 threads, %zu results other than "
                  "serial, %zu scratch sets after 40 waves of 4, %zu after 6 releasing\n",
                  atomic_load(&s.calls), bad, after_waves, ps_pp_pool_slots(s.p));
    if (bad)
        fail_msg("%zu results differ from the serial ones; first: %s", bad, s.first_bad);
    assert_true(after_waves <= 4);
    assert_true(ps_pp_pool_slots(s.p) <= 6);
    set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_bert),
        cmocka_unit_test(test_picard_bert),
        cmocka_unit_test(test_causal_llama3),
        cmocka_unit_test(test_causal_gpt2),
        cmocka_unit_test(test_seq2seq_t5),
        cmocka_unit_test(test_short_lived_threads),
    };
    return cmocka_run_group_tests(tests, ps_test_cli_setup, ps_test_cli_teardown);
}
