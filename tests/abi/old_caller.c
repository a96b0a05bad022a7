/*
 * A program compiled against the previous release's public headers
 * (tests/data/abi/prev/, see its PROVENANCE.md) and run against this
 * library: tests/cli/abi_compat.sh builds it with -Itests/data/abi/prev
 * only, links it with the built libpairshard.so, and relays its TAP.
 *
 * Every struct the library fills for it is followed by guard bytes: the
 * library must write the struct as that release laid it out and not one
 * byte past it, however the struct has grown since; and what it writes
 * must be right (the reader's counts agree with the batches delivered,
 * the cleaner's add up, the tokenizer's ids are BERT's).
 *
 *   old_caller SET_DIR VOCAB_TXT INPUT_JSON
 */
#include <pairshard/pairshard.h>

#include <stdio.h>
#include <string.h>

#define GUARD 64
#define FILL 0xA5

static int n_test, n_fail;

static void ok(int cond, const char *what)
{
    n_test++;
    n_fail += !cond;
    printf("%s %d - %s\n", cond ? "ok" : "not ok", n_test, what);
}

static int intact(const unsigned char *g)
{
    for (size_t i = 0; i < GUARD; i++)
        if (g[i] != FILL)
            return 0;
    return 1;
}

/* A struct of the old layout with guard bytes right after it. */
#define GUARDED(type) \
    struct {          \
        type v;       \
        unsigned char g[GUARD]; \
    }

static void reader_checks(const char *dir)
{
    ps_error err;
    ps_reader_options opt;
    ps_reader_options_init(&opt);
    opt.rank = 0;
    opt.world_size = 1;
    ps_reader *r;
    int rc = ps_reader_open(dir, &opt, NULL, &r, &err);
    ok(rc == 0, "ps_reader_open with the old options struct");
    if (rc)
        return;
    GUARDED(ps_reader_info) info;
    memset(&info, FILL, sizeof info);
    rc = ps_reader_get_info(r, &info.v);
    ok(rc == 0 && intact(info.g), "ps_reader_get_info writes no byte past the old ps_reader_info");
    uint64_t batches = 0, records = 0;
    const ps_batch *b;
    while (ps_reader_next(r, &b, &err) == 1) {
        batches++;
        records += b->B;
        ps_batch_release(r, b);
    }
    ok(info.v.batches_per_epoch == batches && info.v.records_per_epoch == records &&
           info.v.records_total == records && info.v.rank == 0 && info.v.world_size == 1,
       "its fields, at the old offsets, match the epoch delivered");
    GUARDED(ps_reader_stats) st;
    memset(&st, FILL, sizeof st);
    rc = ps_reader_get_stats(r, &st.v);
    ok(rc == 0 && intact(st.g), "ps_reader_get_stats writes no byte past the old ps_reader_stats");
    ok(st.v.batches == batches && st.v.records == records && st.v.slots == info.v.slots,
       "its counters, at the old offsets, match the epoch delivered");
    ps_reader_close(r);
}

static void tokenizer_checks(const char *vocab)
{
    ps_error err;
    ps_tokenizer *tok;
    int rc = ps_tokenizer_load_vocab(vocab, NULL, &tok, &err);
    ok(rc == 0, "ps_tokenizer_load_vocab");
    if (rc)
        return;
    GUARDED(ps_tokenizer_info) ti;
    memset(&ti, FILL, sizeof ti);
    ps_tokenizer_get_info(tok, &ti.v);
    ok(intact(ti.g), "ps_tokenizer_get_info writes no byte past the old ps_tokenizer_info");
    ok(ti.v.vocab_size == 30522 && ti.v.bos_id == 101 && ti.v.eos_id == 102 &&
           ti.v.pad_id == 0 && ti.v.unk_id == 100,
       "its fields are bert-base-uncased's");
    ps_tok_scratch *s = ps_tok_scratch_new();
    GUARDED(ps_encoding) enc;
    memset(&enc, FILL, sizeof enc);
    rc = s ? ps_tokenizer_encode_pair(tok, s, "how many singers", 16, "select count(*)", 15, 0,
                                      &enc.v, &err)
           : PS_ENOMEM;
    ok(rc > 0 && intact(enc.g), "ps_tokenizer_encode_pair writes no byte past the old ps_encoding");
    ok(rc > 0 && enc.v.len == (size_t)rc && enc.v.input_ids[0] == 101 &&
           enc.v.input_ids[enc.v.len - 1] == 102 && enc.v.token_type_ids[enc.v.len - 1] == 1 &&
           !enc.v.truncated,
       "its fields, at the old offsets, are the pair's [CLS] a [SEP] b [SEP]");
    ps_tok_scratch_free(s);
    GUARDED(ps_tokenizer_options) to;
    memset(&to, FILL, sizeof to);
    ps_tokenizer_get_options(tok, &to.v);
    ok(intact(to.g) && to.v.struct_size == sizeof to.v && to.v.lowercase == 1,
       "ps_tokenizer_get_options fills the old struct, struct_size its size");
    ps_tokenizer_free(tok);
}

static void cleaner_checks(const char *input)
{
    ps_error err;
    ps_cleaner *c;
    int rc = ps_cleaner_create(NULL, &c, &err);
    if (rc == 0)
        rc = ps_cleaner_run(c, input, NULL, NULL, &err);
    ok(rc == 0, "ps_cleaner_run");
    if (rc) {
        printf("# %s\n", err.message);
        return;
    }
    GUARDED(ps_clean_counts) cc;
    memset(&cc, FILL, sizeof cc);
    ps_cleaner_get_counts(c, &cc.v);
    ok(intact(cc.g), "ps_cleaner_get_counts writes no byte past the old ps_clean_counts");
    ok(cc.v.records_in > 0 && cc.v.records_in == cc.v.kept + cc.v.rejected + cc.v.duplicates,
       "its counts add up");
    ps_cleaner_free(c);
}

static void template_checks(void)
{
    ps_error err;
    ps_template *t;
    int rc = ps_template_open("pair", &t, &err);
    ok(rc == 0, "ps_template_open");
    if (rc)
        return;
    GUARDED(ps_template_info) tl;
    memset(&tl, FILL, sizeof tl);
    ps_template_get_info(t, &tl.v);
    ok(intact(tl.g), "ps_template_get_info writes no byte past the old ps_template_info");
    /* the pair preset's prompt, as schema/template_presets.c has it */
    ok(tl.v.prompt && strcmp(tl.v.prompt, "{question}{history:picard}") == 0 && tl.v.sha256 &&
           strlen(tl.v.sha256) == 64,
       "its fields are the preset's");
    ps_template_free(t);
}

static void preprocess_checks(const char *dir)
{
    ps_error err;
    ps_preprocessor *p;
    int rc = ps_preprocessor_open(dir, &p, &err);
    ok(rc == 0, "ps_preprocessor_open");
    if (rc) {
        printf("# %s\n", err.message);
        return;
    }
    ps_preprocess_input in;
    memset(&in, 0, sizeof in);
    in.question = "How many singers do we have?";
    GUARDED(ps_preprocess_output) po;
    memset(&po, FILL, sizeof po);
    rc = ps_preprocess(p, &in, &po.v, &err);
    ok(rc == 0 && intact(po.g), "ps_preprocess writes no byte past the old ps_preprocess_output");
    ok(rc == 0 && !po.v.rejected && po.v.length > 2 && po.v.input_ids[0] == 101 &&
           po.v.input_ids[po.v.length - 1] == 102,
       "its ids, at the old offsets, are [CLS] ... [SEP]");
    ps_preprocessor_free(p);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: old_caller SET_DIR VOCAB_TXT INPUT_JSON\n");
        return 2;
    }
    reader_checks(argv[1]);
    tokenizer_checks(argv[2]);
    cleaner_checks(argv[3]);
    template_checks();
    preprocess_checks(argv[1]);
    printf("# library %s\n", ps_version_string());
    return n_fail != 0;
}
