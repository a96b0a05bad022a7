/*
 * pairshard build, phase 1: read → clean + tokenize + spool (worker
 * threads) → commit in input order → index kept records per shard. Phase
 * 2 (writing the shards) is in build_shards.c; the manifest in
 * manifest_write.c.
 */
#include "pipeline/build.h"
#include "pipeline/build_internal.h"
#include "pipeline/build_chunk.h"
#include "pipeline/preprocess_int.h"
#include "common/unicode.h"
#include "ingest/ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_RECORDS 1024
#define CHUNK_BYTES (4u << 20)
/* a chunk's records: a line range's may be more (PS_RANGE_RECORDS) */
#define RING_RECORDS (PS_RANGE_RECORDS > CHUNK_RECORDS ? PS_RANGE_RECORDS : CHUNK_RECORDS)
#define PREFETCH_AHEAD 8 /* records: the dedupe table's misses overlap */
/* What a label costs a worker's length statistics (three points of three
 * 385-bin histograms, and the generation lengths), about, and what all
 * the workers' may cost together: labels past that are added by the
 * statistics stage alone (ps_build_lengths_by_workers). */
#define LENGTHS_LABEL_BYTES ((size_t)36 << 10)
#define LENGTHS_BUDGET ((size_t)256 << 20)

void ps_build_config_init(ps_build_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    ps_clean_options_init(&cfg->clean);
    cfg->max_length = 512;
    cfg->shards = 1;
    cfg->auto_buckets = 8;
    cfg->bucket_multiple = 8;
    cfg->block_records = 128;
    cfg->zstd_level = 3;
    cfg->threads = 1;
}

struct phase1;

/* A stage behind the commit: a thread that takes committed chunks in
 * order and does one job for each (see phase1.staged). */
enum { STAGE_STATS, STAGE_WRITE, N_STAGES };
typedef struct stage {
    struct phase1 *p;
    int kind;              /* STAGE_STATS or STAGE_WRITE */
    pthread_t thread;
    bool started;
    int rc;
    ps_error err;
    double busy;
} stage;

typedef struct phase1 {
    const ps_build_config *cfg;
    ps_cleaner *cleaner;
    int32_t unk_id;
    /* The chunks' order (ingest/ring.h). The dedupe split by hash into
     * parts (ps_cleaner_split_dedupe; none with --keep-duplicates): any
     * worker takes a part's turn once its next chunk is cleaned, so the
     * parts go on side by side, each in input order; a chunk is
     * committed once every part is past it. */
    ps_ring ring;
    chunk *chunks;         /* ring.n of them, indexed by the ring's slots */
    size_t parts;
    double *busy, *idle;   /* per worker: seconds cleaning, seconds waiting */
    /* With more than one thread the commit only accounts and dedupes;
     * two stages behind it, a thread each, take the committed chunks in
     * order (the ring's followers): one adds them to the statistics, one
     * writes the rejects, duplicates and spools. A chunk is free once both
     * are through. */
    bool staged;
    /* With one thread (--threads 1) no worker starts: the calling thread
     * cleans each chunk it reads itself, with this worker state, as
     * `clean --threads 1` does, so one thread means one core. */
    bool inline_work;
    ps_clean_worker *iw;
    ps_clean_worker **iwsrc; /* a mixture: one per source, made on first use */
    ps_tok_scratch *its;
    ps_encode_ctx ix;
    ps_label_links ilinks;
    ps_build_state *st;
    stage stages[N_STAGES];
    /* With the stages, the workers also add the length statistics of
     * committed chunks (of the records ps_build_lengths_by_workers names),
     * each into its own `lengths`, merged at the end (the ring's
     * observing). A chunk is free once it is observed, too. */
    uint32_t worker_labels;
    ps_build_lengths *lengths;
    int obs_rc;            /* under the ring's lock */
    ps_error obs_err;
    /* Line ranges (ingest/range_chain.c): where each range chunk's lines start */
    ps_range_chain chain;
} phase1;

#define PS_UNK_WORD_BYTES 256u

typedef struct unk_sink {
    const ps_tokenizer *tok;
    ps_tok_scratch *ts;
    ps_buf *out;
    packed *pk;
    char field;
} unk_sink;

static int put_unk_word(void *ctx, const char *w, size_t len)
{
    unk_sink *u = ctx;
    if (len > PS_UNK_WORD_BYTES)
        len = PS_UNK_WORD_BYTES; /* the statistics keep less */
    char head[4] = {u->field, (char)ps_tokenizer_unk_hint(u->tok, u->ts, w, len), (char)(len & 0xFF),
                    (char)(len >> 8)};
    if (ps_buf_append(u->out, head, sizeof head) || ps_buf_append(u->out, w, len))
        return PS_ENOMEM;
    u->pk->n_unk++;
    return 0;
}

/* Records which words of a kept record became [UNK] (only records that
 * hold one pay for this second walk). */
static int capture_unk_words(const ps_tokenizer *tok, ps_tok_scratch *ts, chunk *ch, packed *pk,
                             const ps_encoded *e)
{
    unk_sink u = {tok, ts, &ch->out, pk, 0};
    pk->o_unk = ch->out.len;
    int rc = ps_tokenizer_unk_words(tok, ts, e->a, e->a_len, put_unk_word, &u, &ch->err);
    u.field = 1;
    if (!rc && e->b)
        rc = ps_tokenizer_unk_words(tok, ts, e->b, e->b_len, put_unk_word, &u, &ch->err);
    if (rc == PS_ENOMEM)
        rc = ps_error_set(&ch->err, rc, "out of memory while tokenizing");
    return rc;
}

/* The shards keep token types as one boundary: types 0 up to it, 1 from
 * it (BERT's and most templates). A post-processor whose types have
 * another shape (a 0 after a 1, or a type id above 1) cannot be stored
 * faithfully, so the record stops the build rather than lose them. */
static int type_boundary(const ps_encoding *enc, const ps_clean_result *r, uint32_t *tb,
                         ps_error *err)
{
    size_t b = enc->len;
    for (size_t t = 0; t < enc->len; t++)
        if (enc->token_type_ids[t]) {
            b = t;
            break;
        }
    for (size_t t = b; t < enc->len; t++)
        if (enc->token_type_ids[t] != 1)
            return ps_error_set(err, PS_EUSAGE,
                                "%s: record %s: the tokenizer's post-processor gives token type "
                                "%d at position %zu after type 1 began at %zu; the shard format "
                                "keeps types as 0...0 1...1",
                                r->source, r->id ? r->id : "?",
                                enc->token_type_ids[t], t, b);
    *tb = (uint32_t)b;
    return PS_OK;
}

/* Stores a kept record's ids (ps_preprocess_item encoded them) and what
 * the statistics need of them in the chunk's arena. */
/* A causal or seq2seq record's ends and round trip (build_round_trip.c);
 * whether a dialogue turn's prompt shows its earlier utterances. */
static int put_ends(phase1 *p, chunk *ch, packed *pk, ps_tok_scratch *ts, ps_encode_ctx *x,
                    const ps_encoded *e)
{
    const ps_build_config *cfg = ps_build_input_cfg(p->st, ch->input); /* its template */
    pk->o_rt = NOOFF;
    if (pk->it.render.n_history) { /* without a template: question and SQL alone */
        ps_template_info ti = {0};
        if (cfg->tmpl)
            ps_template_get_info(cfg->tmpl, &ti);
        pk->history = true;
        pk->history_hidden = !ti.uses_history;
    }
    if (cfg->layout == PS_LAYOUT_PAIR)
        return 0;
    pk->ends = (ps_vgen_ends){e->eos_appended, e->end_in_text, e->junction_merged, 0};
    char detail[256];
    int rt = ps_build_round_trip(cfg, x, ts, e, detail, sizeof detail, &ch->err);
    if (rt < 0)
        return ch->err.code ? ch->err.code : PS_ENOMEM;
    pk->ends.round_trip = rt;
    if (rt == PS_VGEN_RT_MISMATCH) {
        pk->o_rt = ch->out.len;
        if (ps_buf_append(&ch->out, detail, strlen(detail) + 1))
            return ps_error_set(&ch->err, PS_ENOMEM, "out of memory");
    }
    return 0;
}

/* A kept record's execution fingerprints (store/shards.h's entry),
 * appended to its spool record: 0 or PS_ENOMEM. */
static int spool_exec(ps_buf *spool, const ps_clean_item *it)
{
    unsigned char e[PS_EXEC_ENTRY_BYTES];
    unsigned na = PS_EXEC_ENTRY_NOT_RUN;
    ps_exec_entry_encode(e, it->exec_before >= 0 ? (unsigned)it->exec_before : na,
                         it->exec_status >= 0 ? (unsigned)it->exec_status : na,
                         it->exec_sql_changed ? 1u : 0u, it->exec_before_rows,
                         it->exec_before_hash, it->exec_rows, it->exec_hash);
    return ps_buf_append(spool, e, sizeof e) ? PS_ENOMEM : 0;
}

static int put_encoded(phase1 *p, chunk *ch, packed *pk, ps_tok_scratch *ts, ps_encode_ctx *x,
                       const ps_encoded *ep)
{
    ps_clean_result *r = &pk->it.res;
    const ps_encoded e = *ep;
    int rc;
    uint32_t tb = 0;
    if ((rc = type_boundary(&e.enc, r, &tb, &ch->err)))
        return rc;
    /* a kept record another --part commits is not spooled here */
    const ps_build_config *cfg = p->cfg;
    bool ours = !cfg->part_count || pk->it.hash.low % cfg->part_count == cfg->part_index;
    rc = ours ? ps_spool_record_put(&ch->spool, r->id, e.enc.input_ids, (uint32_t)e.enc.len, tb,
                                    &pk->o_spool)
              : 0;
    if (!rc && ours && p->st->exec_db) /* its fingerprints follow its ids */
        rc = spool_exec(&ch->spool, &pk->it);
    if (!rc && ours && p->st->n_src) { /* a mixture: its source where the label is not kept */
        uint32_t src = p->st->input_source[ch->input];
        memcpy(ch->spool.data + pk->o_spool + 8, &src, sizeof src);
    }
    if (rc)
        return ps_error_set(&ch->err, rc,
                            rc == PS_ELIMIT ? "%s: record %s: %zu tokens, too many for a block"
                                            : "%s: record %s: out of memory while tokenizing",
                            r->source, r->id, e.enc.len);
    pk->ntokens = (uint32_t)e.enc.len;
    pk->type_boundary = tb;
    pk->truncated = e.enc.truncated != 0;
    pk->shortened = e.shortened;
    pk->tables_dropped = e.tables_dropped;
    pk->gold = !e.has_gold ? 0
                           : PS_VSQL_GOLD_MEASURED |
                                 (e.gold_tables_kept ? PS_VSQL_GOLD_TABLES_KEPT : 0) |
                                 (e.gold_columns_kept ? PS_VSQL_GOLD_COLUMNS_KEPT : 0);
    pk->columns_dropped = e.columns_dropped;
    for (size_t t = 0; t < e.enc.len; t++)
        pk->unk_tokens += e.enc.input_ids[t] == p->unk_id;
    if (pk->unk_tokens && (rc = capture_unk_words(p->cfg->tokenizer, ts, ch, pk, &e)))
        return rc;
    if ((rc = put_ends(p, ch, pk, ts, x, &e)))
        return rc;
    pk->q_chars = ps_utf8_count(r->question, r->question_len);
    pk->s_chars = ps_utf8_count(r->sql, r->sql_len);
    /* what the paired statistics would compare on the calling thread */
    const ps_clean_item *it = &pk->it;
    if (it->parsed) {
        pk->q_changed = r->question_len != it->raw_question_len ||
                        memcmp(r->question, it->raw_question, r->question_len) != 0;
        pk->s_changed = r->sql_len != it->raw_sql_len ||
                        memcmp(r->sql, it->raw_sql, r->sql_len) != 0;
    }
    return 0;
}

/* Copies a record's strings into the chunk's arena: the worker's buffers
 * they point into are reused for its next record. */
static int put_strings(phase1 *p, chunk *ch, packed *pk)
{
    ps_clean_item *it = &pk->it;
    if (it->parsed) {
        pk->raw_q_chars = ps_utf8_count(it->raw_question, it->raw_question_len);
        pk->raw_s_chars = ps_utf8_count(it->raw_sql, it->raw_sql_len);
    }
    int rc = ps_clean_item_pack(it, ps_rules_count(ps_cleaner_rules(p->cleaner)), &ch->out,
                                &pk->offs);
    return rc ? ps_error_set(&ch->err, rc, "out of memory while cleaning") : 0;
}

/* Fixes a finished chunk's offsets into pointers (its arena no longer
 * grows). */
static void unpack(chunk *ch)
{
    for (size_t i = 0; i < ch->n; i++)
        ps_clean_item_unpack(&ch->items[i].it, &ch->out, &ch->items[i].offs);
}

/* Looks a chunk's records of dedupe part k up, in input order (the
 * packed items start with their ps_clean_item). */
static int resolve_part(phase1 *p, chunk *ch, size_t k, ps_error *err)
{
    size_t failed;
    return ps_part_groups_resolve(p->cleaner, &ch->groups, ch->items, sizeof *ch->items, k,
                                  &failed, err);
}

/* Cleans and tokenizes every record of a chunk and appends its kept
 * records to worker spool `spool` (a worker thread, or the calling one). */
static void work_chunk(phase1 *p, chunk *ch, size_t spool, ps_clean_worker *w,
                       ps_clean_worker **wsrc, ps_tok_scratch *ts, ps_encode_ctx *x,
                       ps_label_links *links)
{
    ps_buf_reset(&ch->out);
    ps_buf_reset(&ch->spool);
    const ps_build_config *cfg = ps_build_input_cfg(p->st, ch->input);
    if (p->st->n_src) { /* a mixture: the chunk's source's cleaning, made on first use */
        size_t s = p->st->input_source[ch->input];
        if (!wsrc[s] && ps_clean_worker_create(p->st->src[s].cleaner, &wsrc[s])) {
            ch->rc = ps_error_set(&ch->err, PS_ENOMEM, "out of memory starting a worker");
            if (ch->ranged) /* the chunks after it wait for its place */
                ps_range_chain_skip(&p->chain, &ch->ticket);
            return;
        }
        w = wsrc[s];
    }
    if (ch->ranged) { /* the worker reads them */
        ch->rc = ps_range_chain_take(&p->chain, &ch->range, &ch->ticket, &ch->first_line,
                                     &ch->err);
        if (!ch->rc)
            ch->n = ps_line_range_split(&ch->range, ch->first_line, ch->recs, RING_RECORDS,
                                        &ch->blank);
    } else if (ch->lines) /* whole lines: none over the max */
        ch->n = ps_lines_split(ch->raw.data, ch->raw.len, ch->first_line, SIZE_MAX, ch->recs,
                               CHUNK_RECORDS, &ch->blank);
    for (size_t i = 0; i < ch->n && !ch->rc; i++) {
        packed *pk = &ch->items[i];
        memset(pk, 0, sizeof *pk);
        pk->o_spool = NOOFF;
        ps_encoded e; /* the serving preprocessor's code path (preprocess_int.h) */
        int rc = ps_preprocess_item(cfg, w, ts, x, &ch->in, &ch->recs[i], &pk->it, &e,
                                    &ch->err);
        if (!rc && pk->it.res.outcome == PS_OUTCOME_KEPT)
            rc = put_encoded(p, ch, pk, ts, x, &e);
        if (!rc)
            rc = put_strings(p, ch, pk);
        ch->rc = rc;
    }
    ch->spool_index = spool;
    if (!ch->rc && ch->spool.len)
        ch->rc = ps_wspool_append(&p->st->wspools[spool], ch->spool.data, ch->spool.len,
                                  &ch->spool_base, &ch->err);
    if (ch->rc)
        return;
    unpack(ch);
    ps_label_links_set(links, ch->items, sizeof *ch->items, ch->n);
    if (p->parts) /* only this part's kept records: others are not committed */
        ps_part_groups_fill(p->cleaner, &ch->groups, ch->items, sizeof *ch->items, ch->n,
                            p->cfg->part_count, p->cfg->part_index);
}

typedef struct worker_arg {
    phase1 *p;
    size_t index;
} worker_arg;

/* A worker adds a committed chunk's lengths; after a failure the chunks
 * are only passed on. */
static void observe_chunk(phase1 *p, const ps_ring_job *j, size_t self)
{
    const chunk *ch = &p->chunks[j->slot];
    int rc = j->failed_before ? 0
             : ps_build_observe_lengths(&p->lengths[self], ch, p->worker_labels);
    ps_ring_lock(&p->ring);
    if (rc && !p->obs_rc) {
        p->obs_rc = rc;
        ps_error_set(&p->obs_err, rc, "out of memory in the statistics");
    }
    ps_ring_done_locked(&p->ring, j, rc != 0);
    ps_ring_unlock(&p->ring);
}

/* A worker looks part k's chunk up. A chunk that failed is only passed
 * on: its error is the commit's to report. Other parts look the chunk up
 * beside it, so its error is read and set under the ring's lock. */
static void resolve_chunk(phase1 *p, const ps_ring_job *j)
{
    chunk *ch = &p->chunks[j->slot];
    ps_ring_lock(&p->ring);
    bool failed = ch->rc != 0;
    ps_ring_unlock(&p->ring);
    ps_error e;
    ps_error_clear(&e);
    int rc = failed ? 0 : resolve_part(p, ch, j->part, &e);
    ps_ring_lock(&p->ring);
    if (rc && !ch->rc) {
        ch->rc = rc;
        ch->err = e;
    }
    ps_ring_done_locked(&p->ring, j, false);
    ps_ring_unlock(&p->ring);
}

static void *worker_main(void *arg)
{
    phase1 *p = ((worker_arg *)arg)->p;
    size_t self = ((worker_arg *)arg)->index;
    double busy = 0, idle = 0, t0 = ps_build_now();
    ps_clean_worker *w = NULL;
    ps_tok_scratch *ts = ps_tok_scratch_new();
    ps_encode_ctx x;
    memset(&x, 0, sizeof x);
    ps_label_links links = {NULL, 0};
    int init = ps_clean_worker_create(p->cleaner, &w);
    /* a mixture: one per source, made on first use */
    ps_clean_worker **wsrc = calloc(p->st->n_src ? p->st->n_src : 1, sizeof *wsrc);
    init = init ? init : wsrc ? 0 : PS_ENOMEM;
    ps_ring_job j;
    while (ps_ring_take(&p->ring, &j) != PS_RING_STOP) {
        double t1 = ps_build_now();
        idle += t1 - t0;
        if (j.kind == PS_RING_RESOLVE) {
            resolve_chunk(p, &j);
        } else if (j.kind == PS_RING_OBSERVE) {
            observe_chunk(p, &j, self);
        } else {
            chunk *ch = &p->chunks[j.slot];
            if (init || !ts) {
                ch->rc = ps_error_set(&ch->err, PS_ENOMEM, "out of memory starting a worker");
                if (ch->ranged) /* the chunks after it wait for its place */
                    ps_range_chain_skip(&p->chain, &ch->ticket);
            } else
                work_chunk(p, ch, self, w, wsrc, ts, &x, &links);
            ps_ring_done(&p->ring, &j, false);
        }
        t0 = ps_build_now();
        busy += t0 - t1;
    }
    p->busy[self] = busy;
    p->idle[self] = idle + (ps_build_now() - t0);
    ps_clean_worker_free(w);
    for (size_t s = 0; wsrc && s < p->st->n_src; s++)
        ps_clean_worker_free(wsrc[s]);
    free(wsrc);
    ps_tok_scratch_free(ts);
    ps_encode_ctx_free(&x);
    ps_label_links_free(&links);
    return NULL;
}

/* One rejected or duplicate record onto `f`, the file at `path`. */
static int writer_line(FILE *f, const char *path, const ps_clean_result *r,
                       const char *source, ps_error *err)
{
    char *line;
    size_t len;
    if (ps_clean_result_json(r, &line, &len))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    /* a mixture's record: its source's name last ("source" is its position) */
    static const char key[] = ",\"source_name\":\"", end[] = "\"}";
    size_t sn = source ? strlen(source) : 0; /* [A-Za-z0-9_.-]: nothing to escape */
    int bad = source ? fwrite(line, 1, len - 1, f) != len - 1 ||
                           fwrite(key, 1, sizeof key - 1, f) != sizeof key - 1 ||
                           fwrite(source, 1, sn, f) != sn ||
                           fwrite(end, 1, sizeof end - 1, f) != sizeof end - 1
                     : fwrite(line, 1, len, f) != len;
    bad = bad || putc('\n', f) == EOF;
    int e = errno;
    free(line);
    return bad ? ps_error_set(err, PS_EIO, "%s: write failed: %s", path, strerror(e)) : 0;
}

/* Commits one finished chunk in input order (the calling thread). */
static int commit_chunk(ps_build_state *st, chunk *ch, ps_error *err)
{
    if (ch->rc) {
        *err = ch->err;
        return ch->rc;
    }
    const ps_build_config *cfg = st->cfg;
    ps_cleaner *own = ps_build_input_cleaner(st, ch->input); /* a mixture: its source's */
    ps_cleaner_add_blank_lines(st->cleaner, ch->blank);
    if (own != st->cleaner)
        ps_cleaner_add_blank_lines(own, ch->blank);
    if (ch->input != st->commit_input) {
        st->commit_input = ch->input;
        st->input_records = 0;
    }
    uint64_t index = st->input_records; /* the chunk's first record's, in its input */
    st->input_records += ch->n;
    memset(ch->taken, 0, ch->n);
    for (size_t i = 0; i < ch->n && i < PREFETCH_AHEAD; i++)
        ps_cleaner_prefetch(st->cleaner, &ch->items[i].it);
    for (size_t i = 0; i < ch->n; i++) {
        packed *pk = &ch->items[i];
        ps_clean_item *it = &pk->it;
        if (i + PREFETCH_AHEAD < ch->n)
            ps_cleaner_prefetch(st->cleaner, &ch->items[i + PREFETCH_AHEAD].it);
        uint64_t ordinal = st->ordinal++;
        if (ch->in.took_lines)
            ps_clean_item_settle_index(it, index + i);
        if (ps_cleaner_note_fields(own, ch->in.path, it))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        if (cfg->part_count) {
            /* Kept records go to the part of their cleaned pair's hash, so
             * every duplicate meets its original in the same part; others
             * by position. Together the parts cover each record once. */
            uint64_t key = it->res.outcome != PS_OUTCOME_REJECTED ? it->hash.low : ordinal;
            if (key % cfg->part_count != cfg->part_index)
                continue;
        }
        /* an earlier record of the chunk with the same label, committed
         * (not one of another --part's): its number, not a lookup */
        const ps_clean_item *same =
            it->label_as && ch->taken[it->label_as - 1] ? &ch->items[it->label_as - 1].it : NULL;
        int rc = it->leak_checked ? ps_build_leak_commit(st, it, err) : 0;
        rc = rc ? rc : ps_cleaner_commit_as(st->cleaner, ch->in.path, it, same, err);
        if (!rc && st->n_src)
            rc = ps_build_sources_commit(st, ch->input, ch->in.path, it, err);
        if (rc)
            return rc; /* its own message says what failed */
        ch->taken[i] = 1; /* a duplicate's first id stays valid: the dedupe
                           * table's ids never move */
    }
    return 0;
}

/* Writes a committed chunk's records: rejects, duplicates, and kept
 * records to their shard's spool (the write stage). */
static int write_chunk(ps_build_state *st, const chunk *ch, ps_error *err)
{
    for (size_t i = 0; i < ch->n; i++) {
        if (!ch->taken[i])
            continue;
        const packed *pk = &ch->items[i];
        const ps_clean_result *r = &pk->it.res;
        const char *src = st->n_src ? st->cfg->sources[st->input_source[ch->input]].name : NULL;
        int rc;
        if (r->outcome == PS_OUTCOME_REJECTED) {
            rc = writer_line(st->rejects, st->rejects_path, r, src, err);
        } else if (r->outcome == PS_OUTCOME_DUPLICATE) {
            rc = writer_line(st->duplicates, st->duplicates_path, r, src, err);
        } else if (pk->o_spool == NOOFF) { /* kept and ours: spooled */
            rc = ps_error_set(err, PS_EINVAL, "%s: record %s: not spooled", r->source, r->id);
        } else {
            rc = ps_build_spool(st, r, pk->it.label_no, pk->ntokens, ch->spool_index,
                                ch->spool_base + pk->o_spool, err);
            if (!rc && st->n_src)
                ps_build_sources_kept(st, ch->input, pk->ntokens);
        }
        if (rc)
            return rc;
    }
    return 0;
}

double ps_build_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Hands the caller the figures of phase 1 so far (at most every 0.5 s,
 * and always at the end); rendering them is the caller's business, since
 * library code never prints. */
static void progress(ps_build_state *st, uint64_t bytes, bool final)
{
    const ps_build_config *cfg = st->cfg;
    double t = ps_build_now();
    if (!final && t - st->last_progress < 0.5)
        return;
    st->last_progress = t;
    ps_build_progress p = {0};
    p.records = st->ordinal;
    p.bytes = bytes;
    p.total_bytes = st->total_input_bytes;
    p.seconds = t - st->start;
    p.mb_per_s = p.seconds > 0 ? bytes / p.seconds / 1e6 : 0;
    p.eta_seconds = -1;
    if (p.total_bytes > 0 && bytes <= p.total_bytes && p.mb_per_s > 0 && !final)
        p.eta_seconds = (p.total_bytes - bytes) / 1e6 / p.mb_per_s;
    p.final = final;
    cfg->progress(cfg->progress_user, &p);
}

/* Copies a raw record into the chunk. */
static int chunk_add(chunk *ch, const ps_raw_record *rec, size_t cap)
{
    if (ch->n == cap)
        return PS_ELIMIT;
    ch->raw_off[ch->n] = ch->raw.len;
    if (ps_buf_append(&ch->raw, rec->data, rec->len))
        return PS_ENOMEM;
    ch->recs[ch->n] = *rec;
    ch->n++;
    return 0;
}

/* The calling thread's read position across the inputs. */
typedef struct reader {
    ps_build_state *st;
    phase1 *p;
    ps_input_ctx in;
    bool in_open, eof;
    size_t input;          /* the next input to open */
    uint64_t bytes_done;   /* decoded bytes of the inputs closed */
    ps_range_reader rng;   /* the open input's rest, read as line ranges */
} reader;

/* Decoded bytes read so far (for the progress figures). */
static uint64_t bytes_read(const reader *rd)
{
    if (!rd->in_open)
        return rd->bytes_done;
    return rd->bytes_done + (rd->rng.on ? rd->rng.pos : ps_source_bytes_decoded(rd->in.src));
}

/* Closes the open input: its bytes are done. */
static void input_done(reader *rd)
{
    rd->bytes_done = bytes_read(rd);
    ps_range_reader_stop(&rd->rng);
    ps_input_close(ps_build_input_cleaner(rd->st, rd->input), &rd->in);
    rd->in_open = false;
    rd->input++;
}

/* At a chunk's start, with an input open: the next line range of it, when
 * its rest is read as ranges. 1: the chunk has it; 0: not ranges, or the
 * input is done (closed); or a negative code. */
static int fill_range(reader *rd, chunk *ch, ps_error *err)
{
    if (!rd->rng.on) {
        int rc = ps_range_reader_start(&rd->rng, ps_build_input_cleaner(rd->st, rd->input),
                                       &rd->in, err);
        if (rc <= 0)
            return rc;
    }
    if (!ps_range_reader_next(&rd->rng, &rd->p->chain, rd->in.path, &ch->range, &ch->ticket)) {
        input_done(rd);
        return 0;
    }
    ch->ranged = ch->lines = true;
    ch->input = rd->input;
    ps_input_share(&ch->in, &rd->in);
    return 1;
}

/* Fills a chunk with the next records of one input; ch->n 0 at the end. */
static int fill_chunk(reader *rd, chunk *ch, ps_error *err)
{
    const ps_build_config *cfg = rd->st->cfg;
    ps_cleaner *cleaner = NULL; /* the input's (a mixture: its source's) */
    int rc = 0;
    ch->n = 0;
    ch->rc = 0;
    ch->lines = ch->ranged = false;
    ch->blank = 0;
    ps_error_clear(&ch->err);
    ps_buf_reset(&ch->raw);
    while (ch->n < CHUNK_RECORDS && ch->raw.len < CHUNK_BYTES) {
        if (!rd->in_open) {
            if (rd->input == cfg->n_inputs) {
                rd->eof = true;
                break;
            }
            cleaner = ps_build_input_cleaner(rd->st, rd->input);
            if ((rc = ps_input_open(cleaner, &rd->in, cfg->inputs[rd->input], err)) != 0)
                break;
            rd->in_open = true;
        }
        ch->input = rd->input;
        cleaner = ps_build_input_cleaner(rd->st, rd->input);
        if (ch->n == 0) { /* the worker reads its lines itself, when it can */
            int k = fill_range(rd, ch, err);
            if (k < 0) {
                rc = k;
                break;
            }
            if (k > 0)
                break;
            if (!rd->in_open)
                continue; /* the ranges were the input's end */
        }
        if (ch->n == 0) { /* whole lines for the worker to split, when it can */
            int k = ps_input_take_lines(cleaner, &rd->in, &ch->raw, CHUNK_BYTES, CHUNK_RECORDS,
                                        &ch->first_line, err);
            if (k < 0) {
                rc = k;
                break;
            }
            if (k > 0) {
                ch->lines = true;
                ps_input_share(&ch->in, &rd->in);
                break;
            }
        }
        ps_raw_record rec;
        int r = ps_input_next(cleaner, &rd->in, &rec, err);
        if (r < 0) {
            rc = r;
            break;
        }
        if (r == 0) {
            input_done(rd);
            if (ch->n)
                break; /* a chunk holds records of one input */
            continue;
        }
        if (ch->n == 0)
            ps_input_share(&ch->in, &rd->in);
        if ((rc = chunk_add(ch, &rec, CHUNK_RECORDS)) != 0) {
            rc = ps_error_set(err, rc, "out of memory reading %s", rd->in.path);
            break;
        }
    }
    for (size_t i = 0; !rc && i < ch->n; i++)
        ch->recs[i].data = ch->raw.data + ch->raw_off[i];
    return rc;
}

static void chunks_free(phase1 *p)
{
    for (size_t i = 0; p->chunks && i < p->ring.n; i++) {
        free(p->chunks[i].recs);
        free(p->chunks[i].raw_off);
        free(p->chunks[i].items);
        free(p->chunks[i].taken);
        ps_part_groups_free(&p->chunks[i].groups);
        ps_line_range_free(&p->chunks[i].range);
        ps_buf_free(&p->chunks[i].raw);
        ps_buf_free(&p->chunks[i].out);
        ps_buf_free(&p->chunks[i].spool);
    }
    free(p->chunks);
    free(p->busy);
    free(p->idle);
}

static int chunks_alloc(phase1 *p, size_t threads)
{
    p->chunks = calloc(p->ring.n, sizeof *p->chunks);
    p->busy = calloc(threads, sizeof *p->busy);
    p->idle = calloc(threads, sizeof *p->idle);
    if (!p->chunks || !p->busy || !p->idle)
        return PS_ENOMEM;
    for (size_t i = 0; i < p->ring.n; i++) {
        chunk *ch = &p->chunks[i];
        ps_line_range_init(&ch->range);
        ch->recs = malloc(RING_RECORDS * sizeof *ch->recs);
        ch->raw_off = malloc(CHUNK_RECORDS * sizeof *ch->raw_off);
        ch->items = malloc(RING_RECORDS * sizeof *ch->items);
        ch->taken = malloc(RING_RECORDS);
        if (!ch->recs || !ch->raw_off || !ch->items || !ch->taken)
            return PS_ENOMEM;
    }
    for (size_t i = 0; p->parts && i < p->ring.n; i++)
        if (ps_part_groups_init(&p->chunks[i].groups, RING_RECORDS, p->parts))
            return PS_ENOMEM;
    return 0;
}

/* The workers' times into the profile. */
static void profile_workers(ps_build_profile *pf, const phase1 *p, size_t started)
{
    pf->workers = started;
    pf->busy_total = 0;
    for (size_t i = 0; i < started; i++) {
        pf->busy_total += p->busy[i];
        if (i < PS_BUILD_PROFILE_THREADS) {
            pf->worker_busy[i] = p->busy[i];
            pf->worker_wait[i] = p->idle[i];
        }
    }
}

/* With one thread the calling thread is the worker: it adds the lengths
 * the workers would (every record's) straight into the build's
 * statistics, and the time counts as its cleaning, not the commit's. */
static int observe_inline(ps_build_state *st, phase1 *p, const chunk *ch, ps_error *err)
{
    double t = ps_build_now();
    ps_build_lengths own = ps_build_state_lengths(st);
    int rc = ps_build_observe_lengths(&own, ch, UINT32_MAX);
    double d = ps_build_now() - t;
    p->busy[0] += d;
    st->prof.commit -= d; /* the caller adds the whole commit's time */
    return rc ? ps_error_set(err, PS_ENOMEM, "out of memory in the statistics") : 0;
}

/* With the stages: the workers' length statistics, or none (0 labels
 * covered) when they cannot be had. */
static void lengths_start(phase1 *p, size_t threads, bool gen)
{
    size_t cover = LENGTHS_BUDGET / (threads * LENGTHS_LABEL_BYTES);
    p->lengths = calloc(threads, sizeof *p->lengths);
    for (size_t k = 0; p->lengths && k < threads; k++)
        if (ps_build_lengths_new(&p->lengths[k], gen)) {
            for (size_t j = 0; j < k; j++)
                ps_build_lengths_free(&p->lengths[j]);
            free(p->lengths);
            p->lengths = NULL;
        }
    /* at most LENGTHS_BUDGET / LENGTHS_LABEL_BYTES: no uint32_t overflow */
    p->worker_labels = !p->lengths ? 0 : cover ? (uint32_t)cover : 1;
}

/* The workers' length statistics into the build's (after phase 1's
 * threads are joined), and freed. The first worker's become the build's,
 * with what the statistics stage added merged into them: merging all of
 * them into the build's would touch its histograms for the first time
 * here, a page fault every 4 KiB on the calling thread (13-17 ms of the
 * 2-thread Spider x20 build), where the first worker's are in memory. */
static int lengths_finish(ps_build_state *st, phase1 *p, size_t threads, int rc, ps_error *err)
{
    if (!p->lengths)
        return rc;
    double t = ps_build_now();
    bool failed = rc != 0;
    for (size_t k = 0; k < threads; k++) { /* the paired view's counts: into the build's,
                                            * which holds what comes in input order */
        failed = failed || ps_vpaired_merge(st->paired, p->lengths[k].paired) != 0;
        ps_vpaired_free(p->lengths[k].paired);
        p->lengths[k].paired = NULL;
    }
    ps_build_lengths *first = &p->lengths[0];
    ps_build_lengths own = ps_build_state_lengths(st);
    own.paired = NULL; /* the build's stays */
    if (!failed && !(failed = ps_build_lengths_merge(first, &own) != 0)) {
        st->v_raw = first->raw, st->v_clean = first->clean, st->v_tok = first->tok;
        st->v_gen = first->gen;
        *first = own; /* freed below */
    }
    ps_build_lengths all = ps_build_state_lengths(st);
    for (size_t k = 1; !failed && k < threads; k++)
        failed = ps_build_lengths_merge(&all, &p->lengths[k]) != 0;
    for (size_t k = 0; k < threads; k++)
        ps_build_lengths_free(&p->lengths[k]);
    free(p->lengths);
    p->lengths = NULL;
    st->prof.commit += ps_build_now() - t;
    if (failed && !rc)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory in the statistics");
    return rc;
}

/* Runs one stage's job on a committed chunk. */
static int stage_run(stage *sg, const chunk *ch)
{
    if (sg->kind == STAGE_WRITE)
        return write_chunk(sg->p->st, ch, &sg->err);
    if (ps_build_observe_chunk(sg->p->st, ch, sg->p->worker_labels))
        return ps_error_set(&sg->err, PS_ENOMEM, "out of memory in the statistics");
    return 0;
}

/* A stage: follower sg->kind of the ring. A failure is set under the
 * ring's lock, where the calling thread reads it (stage_failed). */
static void *stage_main(void *arg)
{
    stage *sg = arg;
    phase1 *p = sg->p;
    double busy = 0;
    size_t s;
    while (ps_ring_follow(&p->ring, (size_t)sg->kind, &s)) {
        double t = ps_build_now();
        int rc = stage_run(sg, &p->chunks[s]);
        busy += ps_build_now() - t;
        if (rc) {
            ps_ring_lock(&p->ring);
            sg->rc = rc;
            ps_ring_unlock(&p->ring);
        }
        ps_ring_followed(&p->ring, (size_t)sg->kind, rc != 0);
    }
    sg->busy = busy;
    return NULL;
}

/* A stage's failure, if any, as the build's (under the ring's lock, or
 * after the threads are joined). */
static int stage_failed(const phase1 *p, ps_error *err)
{
    for (int k = 0; p->staged && k < N_STAGES; k++)
        if (p->stages[k].rc) {
            *err = p->stages[k].err;
            return p->stages[k].rc;
        }
    if (p->obs_rc) {
        *err = p->obs_err;
        return p->obs_rc;
    }
    return 0;
}

/* With one thread the calling thread looks its chunk's records up, every
 * part in turn, as it cleaned them: the workers' share. */
static void resolve_inline(phase1 *p, chunk *ch)
{
    for (size_t k = 0; k < p->parts; k++)
        if (!ch->rc)
            ch->rc = resolve_part(p, ch, k, &ch->err);
}

/* Commits the head chunk: accounting, dedupe; and, without the stages,
 * its statistics and records (the calling thread). */
static int commit_head(ps_build_state *st, phase1 *p, chunk *ch, ps_error *err)
{
    double t = ps_build_now();
    int rc = commit_chunk(st, ch, err);
    if (!rc && p->inline_work) /* the workers' share, done by the one there is */
        rc = observe_inline(st, p, ch, err);
    if (!rc && !p->staged && ps_build_observe_chunk(st, ch, p->inline_work ? UINT32_MAX : 0))
        rc = ps_error_set(err, PS_ENOMEM, "out of memory in the statistics");
    if (!rc && !p->staged)
        rc = write_chunk(st, ch, err);
    st->prof.commit += ps_build_now() - t;
    return rc;
}

/* Fills the tail chunk from the inputs and queues it; with one thread
 * the calling thread works it first. */
static int fill_tail(ps_build_state *st, phase1 *p, reader *rd, chunk *ch, ps_error *err)
{
    double t = ps_build_now();
    int rc = fill_chunk(rd, ch, err);
    st->prof.read += ps_build_now() - t;
    if (rc || (ch->n == 0 && !ch->lines))
        return rc;
    if (p->inline_work) {
        t = ps_build_now();
        work_chunk(p, ch, 0, p->iw, p->iwsrc, p->its, &p->ix, &p->ilinks);
        resolve_inline(p, ch);
        p->busy[0] += ps_build_now() - t;
    }
    ps_ring_filled(&p->ring, p->inline_work);
    if (st->cfg->progress)
        progress(st, bytes_read(rd), false);
    return 0;
}

/* The calling thread: commits finished chunks in order, fills free ones,
 * and waits when it can do neither (ps_ring_next). */
static int run_ring(ps_build_state *st, phase1 *p, reader *rd, ps_error *err)
{
    int rc = 0;
    while (!rc) {
        size_t s;
        double t = ps_build_now();
        int step = ps_ring_next(&p->ring, rd->eof, &s);
        if (step == PS_RING_DRAINED)
            break;
        if (step == PS_RING_WAITED) {
            st->prof.wait += ps_build_now() - t;
            continue;
        }
        if ((rc = ps_build_cancelled(st->cfg, err)) != 0)
            break;
        if (step == PS_RING_FAILED) {
            ps_ring_lock(&p->ring);
            rc = stage_failed(p, err);
            ps_ring_unlock(&p->ring);
        } else if (step == PS_RING_COMMIT) {
            rc = commit_head(st, p, &p->chunks[s], err);
            ps_ring_committed(&p->ring);
        } else {
            rc = fill_tail(st, p, rd, &p->chunks[s], err);
        }
    }
    return rc;
}

int ps_build_phase1(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    phase1 p;
    memset(&p, 0, sizeof p);
    p.cfg = cfg;
    p.cleaner = st->cleaner;
    {
        ps_tokenizer_info ti; /* unk_id -1: a tokenizer without unk (byte-level BPE) */
        ps_tokenizer_get_info(cfg->tokenizer, &ti);
        p.unk_id = ti.unk_id;
    }
    /* a dedupe part a thread: the lookups go on side by side */
    p.parts = cfg->clean.keep_duplicates ? 0
              : cfg->threads < PS_DEDUPE_PARTS_MAX ? cfg->threads
                                                   : PS_DEDUPE_PARTS_MAX;
    pthread_t *threads = calloc(cfg->threads, sizeof *threads);
    worker_arg *wa = calloc(cfg->threads, sizeof *wa);
    int ringed = ps_ring_init(&p.ring, 2 * cfg->threads + 2, p.parts);
    if (!threads || !wa || ringed || chunks_alloc(&p, cfg->threads) ||
        (p.parts && ps_cleaner_split_dedupe(p.cleaner, p.parts))) {
        chunks_free(&p);
        ps_ring_destroy(&p.ring);
        free(threads);
        free(wa);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    int chained = ps_range_chain_init(&p.chain, ps_ring_mutex(&p.ring));
    p.st = st;
    p.staged = cfg->threads > 1;
    if (p.staged)
        ps_ring_set_followers(&p.ring, N_STAGES);
    for (int k = 0; p.staged && k < N_STAGES; k++) {
        p.stages[k] = (stage){.p = &p, .kind = k};
        p.stages[k].started =
            ps_thread_create(&p.stages[k].thread, stage_main, &p.stages[k],
                             p.stages[k].kind == STAGE_WRITE ? "ps-spool" : "ps-observe") == 0;
        p.staged = p.stages[k].started; /* else the commit does both itself */
    }
    if (!p.staged) /* one that started leaves */
        ps_ring_set_followers(&p.ring, 0);
    if (p.staged) { /* before any chunk: the stages and workers read worker_labels */
        lengths_start(&p, cfg->threads, st->v_gen != NULL);
        ps_ring_set_observe(&p.ring, p.worker_labels != 0);
    }
    size_t started = 0;
    p.inline_work = cfg->threads == 1;
    if (p.inline_work) {
        p.its = ps_tok_scratch_new();
        p.iwsrc = calloc(st->n_src ? st->n_src : 1, sizeof *p.iwsrc);
        if (ps_clean_worker_create(p.cleaner, &p.iw) == 0 && p.its && p.iwsrc)
            started = 1; /* the calling thread is the worker */
    }
    for (; !p.inline_work && started < cfg->threads; started++) {
        wa[started] = (worker_arg){&p, started};
        if (ps_thread_create(&threads[started], worker_main, &wa[started], "ps-work") != 0)
            break;
    }
    int rc = started > 0 ? 0
             : ps_error_set(err, PS_ENOMEM, p.inline_work ? "out of memory starting to clean"
                                                          : "cannot start worker threads");
    if (!rc && chained)
        rc = ps_error_set(err, PS_ENOMEM, "out of memory");
    reader rd;
    memset(&rd, 0, sizeof rd);
    rd.st = st;
    rd.p = &p;
    if (!rc)
        rc = run_ring(st, &p, &rd, err);
    ps_ring_stop(&p.ring); /* on error, queued chunks are not cleaned */
    for (size_t i = 0; !p.inline_work && i < started; i++)
        pthread_join(threads[i], NULL);
    for (int k = 0; k < N_STAGES; k++)
        if (p.stages[k].started)
            pthread_join(p.stages[k].thread, NULL);
    if (rd.in_open) { /* stopped early: after the workers, who may read its ranges */
        ps_range_reader_stop(&rd.rng);
        ps_input_close(ps_build_input_cleaner(st, rd.input), &rd.in);
    }
    if (!rc) /* the last chunk's stages */
        rc = stage_failed(&p, err);
    rc = lengths_finish(st, &p, cfg->threads, rc, err);
    profile_workers(&st->prof, &p, started);
    st->prof.calling_worker = p.inline_work;
    ps_clean_worker_free(p.iw);
    for (size_t s = 0; p.iwsrc && s < st->n_src; s++)
        ps_clean_worker_free(p.iwsrc[s]);
    free(p.iwsrc);
    ps_tok_scratch_free(p.its);
    ps_encode_ctx_free(&p.ix);
    ps_label_links_free(&p.ilinks);
    st->prof.stats = p.stages[STAGE_STATS].busy;
    st->prof.write = p.stages[STAGE_WRITE].busy;
    if (cfg->progress)
        progress(st, rd.bytes_done, true);
    free(threads);
    free(wa);
    chunks_free(&p);
    if (chained == 0)
        ps_range_chain_destroy(&p.chain);
    ps_ring_destroy(&p.ring);
    return rc;
}
