/* The round trip of pairshard/preprocess.h on every layout: sets built by
 * the CLI from Spider dev (rules, --normalize nfc, --strip-joiners, a
 * schema prompt under --template ddl), BIRD's sample (a template file
 * reading {evidence}, its schema, rules, --sql-normalize none, --utf8
 * replace), a CSpider-like set (rules on Chinese text, --normalize nfc,
 * --sql-backslash-escapes) and SParC's and CoSQL's dialogues (--turns,
 * picard with {history:picard}), each as pair, causal and seq2seq. For
 * every record (every turn), the ids ps_preprocess gives the raw record
 * (a turn: its fields and history) equal the ids the set stores, read
 * through ps_reader (pair: input_ids and token_type_ids; causal, unpacked:
 * input_ids with the completion from prompt_lens; seq2seq: the source
 * input_ids then the target labels), with types 0 before the stored
 * boundary and 1 after; the records it rejects are the build's; and the
 * question served without SQL gives the stored ids before the boundary
 * (pair: [CLS] A [SEP]; causal: prefix and prompt; seq2seq: the source). */
#include "tests/support/testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void sh(const char *cmd)
{
    if (system(cmd) != 0)
        fail_msg("failed: %s", cmd);
}

/* ps_test_data into a buffer of its own (it returns a static one). */
static const char *data(const char *rel)
{
    static char bufs[8][1024];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, sizeof bufs[0], "%s", ps_test_data(rel));
    return b;
}

static const char *tmp_file(const char *name, const char *text)
{
    static char bufs[4][256];
    static int k;
    char *path = bufs[k++ % 4];
    snprintf(path, sizeof bufs[0], "%s/%s", ps_test_root, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* A stored record: its ids (segment A/prompt/source then B/completion/
 * target) and where the second part starts. */
typedef struct rec {
    char *id;
    int32_t *ids;
    uint32_t len, boundary;
} rec;

typedef struct stored {
    rec *r;
    size_t n, cap;
} stored;

static int by_id(const void *a, const void *b)
{
    return strcmp(((const rec *)a)->id, ((const rec *)b)->id);
}

static int32_t at(const ps_batch *b, const void *arr, size_t i)
{
    return b->dtype == PS_DTYPE_INT32 ? ((const int32_t *)arr)[i]
                                      : (int32_t)((const int64_t *)arr)[i];
}

/* Row i of batch b as a stored record, whatever the layout. */
static void take_row(const ps_batch *b, uint32_t i, rec *r)
{
    uint32_t len = (uint32_t)at(b, b->lengths, i), tlen = 0;
    if (b->layout == PS_LAYOUT_SEQ2SEQ)
        tlen = (uint32_t)at(b, b->target_lens, i);
    r->id = strdup(b->ids[i]);
    r->len = len + tlen;
    r->ids = malloc((r->len + 1) * sizeof *r->ids);
    for (uint32_t t = 0; t < len; t++)
        r->ids[t] = at(b, b->input_ids, (size_t)i * b->T + t);
    if (b->layout == PS_LAYOUT_SEQ2SEQ) {
        r->boundary = len;
        for (uint32_t t = 0; t < tlen; t++)
            r->ids[len + t] = (int32_t)((const int64_t *)b->labels)[(size_t)i * b->T_target + t];
    } else if (b->layout == PS_LAYOUT_CAUSAL) {
        r->boundary = (uint32_t)at(b, b->prompt_lens, i);
    } else {
        r->boundary = len;
        for (uint32_t t = 0; t < len; t++)
            if (at(b, b->token_type_ids, (size_t)i * b->T + t)) {
                r->boundary = t;
                break;
            }
    }
}

static void add_row(void *ctx, const ps_batch *b, uint32_t i)
{
    stored *s = ctx;
    assert_int_equal(b->n_segments ? b->n_segments : b->B, b->B); /* unpacked */
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->r = realloc(s->r, s->cap * sizeof *s->r);
    }
    take_row(b, i, &s->r[s->n++]);
}

/* Every stored record through the reader (one rank, unpacked), by id. */
static void read_set(const char *dir, stored *s)
{
    memset(s, 0, sizeof *s);
    ps_test_read_rows(dir, 0, add_row, s);
    qsort(s->r, s->n, sizeof *s->r, by_id);
}

static void stored_free(stored *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->r[i].id), free(s->r[i].ids);
    free(s->r);
}

static const rec *find(const stored *s, const char *id)
{
    rec key = {.id = (char *)id};
    return bsearch(&key, s->r, s->n, sizeof *s->r, by_id);
}

typedef struct trip {
    const char *dir;
    stored s;
    ps_preprocessor *p;
    size_t kept, rejected, served, truncated, shortened;
} trip;

/* One record: `full` (the raw record, or fields with SQL) must give the
 * stored ids of `id`; `bare` (the same without SQL) those before its
 * boundary. */
static void one(trip *t, const char *id, const ps_preprocess_input *full,
                const ps_preprocess_input *bare)
{
    ps_preprocess_output out;
    ps_error err = {0};
    if (ps_preprocess(t->p, full, &out, &err))
        fail_msg("%s: %s", id, err.message);
    const rec *r = find(&t->s, id);
    if (out.rejected) {
        t->rejected++;
        if (r)
            fail_msg("%s: %s rejected (%s), but the set stores it", t->dir, id, out.reason);
        return;
    }
    if (!r)
        fail_msg("%s: %s kept, but the set does not store it", t->dir, id);
    t->kept++;
    if (out.length != r->len || memcmp(out.input_ids, r->ids, r->len * sizeof *r->ids)) {
        uint32_t k = 0;
        while (k < r->len && k < out.length && out.input_ids[k] == r->ids[k])
            k++;
        fail_msg("%s: %s (\"%s\"): %zu ids served, %u stored, the first %u equal", t->dir, id,
                 out.question, out.length, r->len, k);
    }
    for (uint32_t k = 0; k < r->len; k++)
        if (out.token_type_ids[k] != (k >= r->boundary) || out.attention_mask[k] != 1)
            fail_msg("%s: %s: token %u: type %u, the stored boundary is %u", t->dir, id, k,
                     out.token_type_ids[k], r->boundary);
    if (out.truncated) { /* a pair cut at max_length: its prompt alone fits whole */
        t->truncated++;
        return;
    }
    t->shortened += out.shortened; /* its schema selected from the question alone */
    if (ps_preprocess(t->p, bare, &out, &err))
        fail_msg("%s: %s: %s", t->dir, id, err.message);
    if (out.rejected || out.length != r->boundary ||
        memcmp(out.input_ids, r->ids, r->boundary * sizeof *r->ids))
        fail_msg("%s: %s served without SQL: %zu ids, the stored boundary is %u", t->dir, id,
                 out.length, r->boundary);
    t->served++;
}

static void trip_open(trip *t, const char *dir)
{
    memset(t, 0, sizeof *t);
    t->dir = dir;
    read_set(dir, &t->s);
    t->p = ps_test_preprocessor(dir);
}

/* Everything stored was served, and rejected as the build did. */
static void trip_close(trip *t)
{
    json_t *m = json_load_file(ps_test_path(t->dir, "manifest.json"), 0, NULL);
    assert_non_null(m);
    json_t *acc = json_object_get(m, "accounting"), *rule;
    long rejected = (long)json_integer_value(json_object_get(acc, "rejected"));
    size_t i;
    json_array_foreach(json_object_get(acc, "rules"), i, rule) /* each rule did something */
        if (json_integer_value(json_object_get(rule, "matched")) <= 0)
            fail_msg("%s: rule %s matched nothing", t->dir,
                     json_string_value(json_object_get(rule, "name")));
    json_decref(m);
    if (t->kept != t->s.n || (long)t->rejected != rejected)
        fail_msg("%s: %zu kept of %zu stored; %zu rejected, the build %ld", t->dir, t->kept,
                 t->s.n, t->rejected, rejected);
    /* every record whose prompt is not cut by pair truncation, those
     * whose schema was selected included (Spider's ddl at 400 tokens:
     * over half of the causal set's) */
    if (t->served + t->truncated != t->kept || t->served < t->kept / 2)
        fail_msg("%s: %zu of %zu kept served without SQL (%zu truncated)", t->dir, t->served,
                 t->kept, t->truncated);
    print_message("# %s: %zu kept, %zu rejected, %zu also served without SQL (%zu with a "
                  "selected schema)\n", strrchr(t->dir, '/') + 1, t->kept, t->rejected,
                  t->served, t->shortened);
    ps_preprocessor_free(t->p);
    stored_free(&t->s);
}

/* A set of records (a JSON array): each element re-serialised, as the
 * build read it, then its question (and db_id, evidence) alone. */
static size_t round_trip(const char *dir, const char *input, const char *sql_key)
{
    trip t;
    trip_open(&t, dir);
    json_t *arr = json_load_file(input, 0, NULL);
    assert_true(json_is_array(arr));
    const char *base = strrchr(input, '/') + 1;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        char *raw = json_dumps(e, JSON_COMPACT), id[256];
        snprintf(id, sizeof id, "%s:#%zu", base, i);
        ps_preprocess_field ev = {"evidence", json_string_value(json_object_get(e, "evidence"))};
        ps_preprocess_input full = {.record = raw, .record_len = strlen(raw)};
        ps_preprocess_input bare = {.question = json_string_value(json_object_get(e, "question")),
                                    .db_id = json_string_value(json_object_get(e, "db_id")),
                                    .fields = &ev, .n_fields = ev.value ? 1 : 0};
        assert_non_null(json_object_get(e, sql_key));
        one(&t, id, &full, &bare);
        free(raw);
    }
    json_decref(arr);
    size_t kept = t.kept;
    trip_close(&t);
    return kept;
}

/* A set of dialogues (SParC's and CoSQL's shape): every turn given as its
 * fields, with the earlier utterances, newest first. */
static size_t dialogues(const char *dir, const char *input)
{
    trip t;
    trip_open(&t, dir);
    json_t *arr = json_load_file(input, 0, NULL);
    assert_true(json_is_array(arr));
    const char *base = strrchr(input, '/') + 1;
    size_t turns = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *d = json_array_get(arr, i), *inter = json_object_get(d, "interaction");
        const char *hist[64];
        size_t n = json_array_size(inter);
        assert_true(n > 0 && n <= 64);
        for (size_t k = 0; k < n; k++) {
            json_t *turn = json_array_get(inter, k);
            char id[256];
            snprintf(id, sizeof id, "%s:#%zu/%zu", base, i, k);
            for (size_t h = 0; h < k; h++) /* newest first */
                hist[h] = json_string_value(json_object_get(json_array_get(inter, k - 1 - h),
                                                            "utterance"));
            ps_preprocess_input full = {
                .question = json_string_value(json_object_get(turn, "utterance")),
                .sql = json_string_value(json_object_get(turn, "query")),
                .db_id = json_string_value(json_object_get(d, "database_id")),
                .history = hist, .n_history = k};
            ps_preprocess_input bare = full;
            bare.sql = NULL;
            one(&t, id, &full, &bare);
            turns++;
        }
    }
    /* a raw dialogue cannot say which turn is served: refused */
    char *raw = json_dumps(json_array_get(arr, 0), JSON_COMPACT);
    ps_preprocess_input in = {.record = raw, .record_len = strlen(raw)};
    ps_preprocess_output out;
    ps_error err = {0};
    assert_int_equal(ps_preprocess(t.p, &in, &out, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "--turns"));
    free(raw);
    json_decref(arr);
    assert_int_equal(t.kept, turns);
    trip_close(&t);
    return turns;
}

/* What each layout builds with: a tokenizer the layout suits. */
static const char *layout_opts(int layout)
{
    static char opts[1024];
    if (layout == PS_LAYOUT_PAIR)
        snprintf(opts, sizeof opts, "--vocab '%s'", data("vocab/bert-base-uncased.vocab.txt"));
    else if (layout == PS_LAYOUT_CAUSAL)
        snprintf(opts, sizeof opts, "--layout causal --tokenizer-json '%s'",
                 data("tokenizers/llama3-style.tokenizer.json"));
    else
        snprintf(opts, sizeof opts, "--layout seq2seq --tokenizer-json '%s' "
                 "--max-target-length 160", data("tokenizers/t5-small.tokenizer.json"));
    return opts;
}

static const char *build(int layout, const char *set, const char *opts, const char *input)
{
    static char dir[256];
    char cmd[8192];
    snprintf(dir, sizeof dir, "%s/%s-%s", ps_test_root, set, ps_layout_name(layout));
    snprintf(cmd, sizeof cmd, "'%s' build -q --threads 2 --keep-duplicates --no-gate %s %s "
             "-o '%s' '%s'", ps_test_bin, layout_opts(layout), opts, dir, input);
    sh(cmd);
    return dir;
}

static void spider(int layout)
{
    const char *rules = tmp_file("spider-rules.json",
        "[{\"name\": \"count-of\", \"field\": \"question\", \"replace\": \"^How many\", "
        "\"with\": \"Count of\", \"flags\": \"i\"},\n"
        " {\"name\": \"no-like\", \"field\": \"sql\", \"drop_if\": \"\\\\bLIKE\\\\b\"},\n"
        " {\"name\": \"spaced-eq\", \"field\": \"sql\", \"replace\": \"\\\\s*=\\\\s*\", "
        "\"with\": \" = \"}]\n");
    char opts[2048];
    /* 400 tokens: some schemas shortened, a few records too_long */
    snprintf(opts, sizeof opts, "--rules '%s' --normalize nfc --strip-joiners --schema '%s' "
             "--template ddl --max-length 400", rules, data("spider/tables.json"));
    const char *dir = build(layout, "spider", opts, data("spider/dev.json"));
    size_t kept = round_trip(dir, data("spider/dev.json"), "query");
    assert_true(kept > 600 && kept < 1034); /* the LIKE queries are dropped */
}

static void bird(int layout)
{
    const char *tpl = tmp_file("bird-template.json",
        "{\"prompt\": \"{question} Hint: {evidence} | {schema:ddl}\", \"completion\": \"{sql}\"}\n");
    const char *rules = tmp_file("bird-rules.json",
        "[{\"name\": \"ticks\", \"field\": \"sql\", \"replace\": \"`\", \"with\": \"\\\"\"},\n"
        " {\"name\": \"please\", \"field\": \"question\", \"replace\": \"^Please \", "
        "\"with\": \"\"}]\n");
    char opts[2048];
    snprintf(opts, sizeof opts, "--schema '%s' --template '%s' --rules '%s' --sql-field SQL,query "
             "--sql-normalize none --utf8 replace --max-length 2048",
             data("formats/bird/dev_tables.json"), tpl, rules);
    const char *dir = build(layout, "bird", opts, data("formats/bird/dev.json"));
    assert_int_equal(round_trip(dir, data("formats/bird/dev.json"), "SQL"), 6);
}

static void cspider(int layout)
{
    char input[256], cmd[2048], opts[2048];
    snprintf(input, sizeof input, "%s/cspider.json", ps_test_root);
    if (access(input, R_OK) != 0) {
        snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' 400",
                 data("cspider/make_cspider_like.py"), data("spider/dev.json"), input);
        sh(cmd);
    }
    const char *rules = tmp_file("cspider-rules.json",
        "[{\"name\": \"how-many\", \"field\": \"question\", \"replace\": \"^\\u6709\\u591a\\u5c11\", "
        "\"with\": \"\\u591a\\u5c11\"},\n"
        " {\"name\": \"fw-question-mark\", \"field\": \"question\", \"replace\": \"\\uff1f$\", "
        "\"with\": \"?\"}]\n");
    snprintf(opts, sizeof opts, "--rules '%s' --normalize nfc --sql-backslash-escapes "
             "--max-length 120", rules);
    const char *dir = build(layout, "cspider", opts, input);
    assert_true(round_trip(dir, input, "query") > 300);
}

static void turns(int layout, const char *name, const char *input)
{
    char opts[2048];
    snprintf(opts, sizeof opts, "--turns interaction --schema '%s' --template picard "
             "--max-length 1024", data("spider/tables.json"));
    const char *dir = build(layout, name, opts, input);
    assert_true(dialogues(dir, input) >= 3);
}

static void run_layout(int layout)
{
    spider(layout);
    bird(layout);
    cspider(layout);
    turns(layout, "sparc", data("formats/sparc/dev.json"));
    turns(layout, "cosql", data("formats/cosql/dev.json"));
}

static void test_pair(void **state)
{
    (void)state;
    run_layout(PS_LAYOUT_PAIR);
}

static void test_causal(void **state)
{
    (void)state;
    run_layout(PS_LAYOUT_CAUSAL);
}

static void test_seq2seq(void **state)
{
    (void)state;
    run_layout(PS_LAYOUT_SEQ2SEQ);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair),
        cmocka_unit_test(test_causal),
        cmocka_unit_test(test_seq2seq),
    };
    return cmocka_run_group_tests(tests, ps_test_cli_setup, ps_test_cli_teardown);
}
