/* pairshard read: streams a shard set through the reader (pairshard/reader.h)
 * and prints each batch as one JSON line, so the epoch plan, sharding over
 * ranks, resumption and padding can be looked at and compared from a shell.
 *
 * The batching options (cli/read_args.c) are shared with 'pairshard
 * bench-read', which must measure exactly what this prints. */
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/opt_error.h"
#include "cli/read_args.h"
#include "common/outfile.h"
#include "common/ps_internal.h"
#include "pairshard/reader.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pairshard read -------------------------------------------------------- */

static const char USAGE[] =
    "usage: pairshard read DIR... [options]\n"
    "\n"
    "Reads this rank's epoch of the shard set in DIR (written by 'pairshard build')\n"
    "through the reader trainers use and prints one JSON line per batch (several\n"
    "DIRs: read as one mixture, each set a source unless it has its own):\n"
    "  {\"step\":S,\"epoch\":E,\"bucket\":K,\"B\":B,\"T\":T,\"ids\":[record ids],\n"
    "   \"lengths\":[tokens of each record]}\n"
    "and, in a set of several sources, \"sources\":[each record's source name].\n"
    "The batches are a function of the set and the batching options only: the\n"
    "same flags print the same bytes whatever --threads, --prefetch or --device.\n"
    "\n"
    "%s"
    "Output and resumption:\n"
    "  --limit K              stop after K batches\n"
    "  --save-state FILE      after the last printed batch, write the reader's\n"
    "                         position (128 bytes) to FILE (replaced whole; not\n"
    "                         inside the shard set)\n"
    "  --resume FILE          continue from a saved position: prints exactly the\n"
    "                         batches the saving run would have printed next (its\n"
    "                         seed and epoch apply; the other batching flags and the\n"
    "                         set must be the same)\n"
    "  --labels               add \"labels\" (label ids, -1 = none) and \"label_names\"\n"
    "                         (the manifest's names, null = none)\n"
    "  --tokens               add \"input_ids\" and \"token_type_ids\": one row per\n"
    "                         record, trimmed to its length\n"
    "  --check                check every batch against its lengths: attention mask 1\n"
    "                         on the sequence and 0 on padding, padding ids and types,\n"
    "                         types 0 then 1, T as --pad says, lengths within the\n"
    "                         bucket, the token budget; exit 1 at the first mismatch\n"
    "  -h, --help             this help\n"
    "\n"
    "Exit status: 0 done, 1 a damaged block (the message names the shard, bucket and\n"
    "block; also a shard truncated while it is read) or another read error, 2 usage\n"
    "error or a set or state that cannot be used (no manifest, a newer format version,\n"
    "a state saved with other options, a --resume FILE that is not a regular file).\n";

enum { O_LIMIT = 300, O_SAVE, O_RESUME, O_LABELS, O_TOKENS, O_CHECK };

static const struct option OWN_OPTS[] = {
    {"limit", required_argument, NULL, O_LIMIT},
    {"save-state", required_argument, NULL, O_SAVE},
    {"resume", required_argument, NULL, O_RESUME},
    {"labels", no_argument, NULL, O_LABELS},
    {"tokens", no_argument, NULL, O_TOKENS},
    {"check", no_argument, NULL, O_CHECK},
    {"help", no_argument, NULL, 'h'},
};
#define N_OWN (sizeof OWN_OPTS / sizeof OWN_OPTS[0])

static int64_t elem(const void *a, int dtype, size_t i)
{
    return dtype == PS_DTYPE_INT32 ? ((const int32_t *)a)[i] : ((const int64_t *)a)[i];
}

/* Sets o.k1 = v1 and o.k2 = v2 (both taken); -1, with neither set, when
 * either is NULL (out of memory). */
static int set_pair(json_t *o, const char *k1, json_t *v1, const char *k2, json_t *v2)
{
    if (!v1 || !v2) {
        json_decref(v1);
        json_decref(v2);
        return -1;
    }
    json_object_set_new(o, k1, v1);
    json_object_set_new(o, k2, v2);
    return 0;
}

static json_t *int_row(const void *a, int dtype, size_t from, size_t n)
{
    json_t *row = json_array();
    for (size_t i = 0; i < n && row; i++)
        if (json_array_append_new(row, json_integer(elem(a, dtype, from + i))))
            return json_decref(row), NULL;
    return row;
}

/* Row i of a B x `cols` array, trimmed to n, as o[key] (skipped when the
 * array is NULL). Returns -1 when memory ran out. */
static int put_row(json_t *rows, const void *a, int dtype, size_t i, size_t cols, size_t n)
{
    if (!a)
        return 0;
    json_t *row = int_row(a, dtype, i * cols, n);
    return row ? json_array_append_new(rows, row) : -1;
}

/* Token rows of a causal or seq2seq batch (--tokens), each trimmed to its
 * real tokens: causal input_ids, labels, position_ids [B rows]; seq2seq
 * input_ids (source), labels and decoder_input_ids (target). */
static int gen_tokens(json_t *o, const ps_batch *b)
{
    int s2s = b->layout == PS_LAYOUT_SEQ2SEQ;
    const char *keys[3] = {"input_ids", "labels", s2s ? "decoder_input_ids" : "position_ids"};
    const void *arrs[3] = {b->input_ids, b->labels, s2s ? b->decoder_input_ids : b->position_ids};
    int dts[3] = {b->dtype, PS_DTYPE_INT64, b->dtype};
    for (int a = 0; a < 3; a++) {
        if (!arrs[a])
            continue;
        json_t *rows = json_array();
        if (!rows)
            return -1;
        json_object_set_new(o, keys[a], rows);
        size_t cols = s2s && a > 0 ? b->T_target : b->T;
        const void *lens = s2s && a > 0 ? b->target_lens : b->lengths;
        for (uint32_t i = 0; i < b->B; i++) {
            int64_t len = elem(lens, b->dtype, i);
            size_t n = len < 0 ? 0 : len > (int64_t)cols ? cols : (size_t)len;
            if (put_row(rows, arrs[a], dts[a], i, cols, n))
                return -1;
        }
    }
    return 0;
}

/* The generator layouts' fields (docs/READER.md, "Layouts"). */
static int gen_fields(json_t *o, const ps_reader *r, const ps_batch *b, int labels, int tokens)
{
    int s2s = b->layout == PS_LAYOUT_SEQ2SEQ;
    json_object_set_new(o, "layout", json_string(s2s ? "seq2seq" : "causal"));
    json_object_set_new(o, "n_segments", json_integer(b->n_segments));
    json_object_set_new(o, "max_seqlen", json_integer(b->max_seqlen));
    if (s2s)
        json_object_set_new(o, "T_target", json_integer(b->T_target));
    const char *keys[5] = {"seq_lens", "prompt_lens", "seg_rows", "target_lens", "cu_seqlens"};
    const void *arrs[5] = {b->seq_lens, b->prompt_lens, b->seg_rows, b->target_lens,
                           b->cu_seqlens};
    size_t ns[5] = {b->n_segments, b->n_segments, b->n_segments, b->B, b->n_segments + 1};
    for (int a = 0; a < 5; a++) {
        if (!arrs[a])
            continue;
        json_t *row = a == 4 ? json_array() : int_row(arrs[a], b->dtype, 0, ns[a]);
        for (size_t i = 0; a == 4 && row && i < ns[a]; i++)
            json_array_append_new(row, json_integer(b->cu_seqlens[i]));
        if (!row)
            return -1;
        json_object_set_new(o, keys[a], row);
    }
    if (labels) {
        json_t *names = json_array();
        if (set_pair(o, "class_labels", int_row(b->class_labels, PS_DTYPE_INT64, 0,
                                                b->n_segments), "label_names", names))
            return -1;
        for (uint32_t i = 0; i < b->n_segments; i++) {
            int64_t id = elem(b->class_labels, PS_DTYPE_INT64, i);
            const char *name = id >= 0 && id <= UINT32_MAX ? ps_reader_get_label(r, (uint32_t)id) : NULL;
            json_array_append_new(names, name ? json_string(name) : json_null());
        }
    }
    return tokens ? gen_tokens(o, b) : 0;
}

/* The batch as one JSON object; NULL (and *bad_id set) when an id is not
 * valid UTF-8 or memory ran out. */
static json_t *batch_json(const ps_reader *r, const ps_batch *b, int labels, int tokens,
                          uint32_t *bad_id)
{
    /* Pair batches print as they always have; the others name their
     * records per segment (n_segments ids). */
    uint32_t n_ids = b->layout == PS_LAYOUT_PAIR ? b->B : b->n_segments;
    json_t *o = json_pack("{sIsIsIsIsI}", "step", (json_int_t)b->step, "epoch",
                          (json_int_t)b->epoch, "bucket", (json_int_t)b->bucket, "B",
                          (json_int_t)b->B, "T", (json_int_t)b->T);
    json_t *ids = json_array();
    if (!o || !ids)
        goto fail;
    json_object_set_new(o, "ids", ids);
    for (uint32_t i = 0; i < n_ids; i++) {
        json_t *s = json_string(b->ids[i]);
        if (!s) {
            *bad_id = i;
            goto fail;
        }
        json_array_append_new(ids, s);
    }
    json_t *lens = int_row(b->lengths, b->dtype, 0, b->B);
    if (!lens)
        goto fail;
    json_object_set_new(o, "lengths", lens);
    ps_reader_info info;
    ps_reader_get_info(r, &info);
    if (info.n_sources > 1) { /* a set of several sources: each record's */
        json_t *src = json_array();
        if (!src)
            goto fail;
        json_object_set_new(o, "sources", src);
        for (uint32_t i = 0; i < n_ids; i++)
            json_array_append_new(src,
                                  json_string(ps_reader_get_source(r, (uint32_t)b->sources[i])));
    }
    if (b->layout != PS_LAYOUT_PAIR) {
        if (gen_fields(o, r, b, labels, tokens))
            goto fail;
        return o;
    }
    if (labels) {
        json_t *names = json_array();
        if (set_pair(o, "labels", int_row(b->labels, PS_DTYPE_INT64, 0, b->B), "label_names",
                     names))
            goto fail;
        for (uint32_t i = 0; i < b->B; i++) {
            int64_t id = elem(b->labels, PS_DTYPE_INT64, i);
            const char *name = id >= 0 && id <= UINT32_MAX ? ps_reader_get_label(r, (uint32_t)id) : NULL;
            json_array_append_new(names, name ? json_string(name) : json_null());
        }
    }
    if (tokens) {
        json_t *rows = json_array(), *types = json_array();
        if (set_pair(o, "input_ids", rows, "token_type_ids", types))
            goto fail;
        for (uint32_t i = 0; i < b->B; i++) {
            int64_t len = elem(b->lengths, b->dtype, i);
            size_t n = len < 0 ? 0 : len > (int64_t)b->T ? b->T : (size_t)len;
            json_t *row = int_row(b->input_ids, b->dtype, (size_t)i * b->T, n);
            json_t *trow = int_row(b->token_type_ids, b->dtype, (size_t)i * b->T, n);
            if (!row || !trow) {
                json_decref(row);
                json_decref(trow);
                goto fail;
            }
            json_array_append_new(rows, row);
            json_array_append_new(types, trow);
        }
    }
    return o;
fail:
    json_decref(o);
    if (!o)
        json_decref(ids);
    return NULL;
}

static uint64_t round_up(uint64_t x, uint64_t m)
{
    return m > 1 ? (x + m - 1) / m * m : x;
}

/* --check of a causal batch: rows are segments from column 0 (mask 1 up
 * to the row's length), positions restart at 0 per segment, labels -100
 * on each prompt and on padding and the token elsewhere, cu_seqlens the
 * prefix sums of seq_lens. */
static int check_causal(const ps_reader_options *o, const ps_batch *b, char *msg, size_t msgn)
{
    const int dt = b->dtype;
    const int64_t *lab = b->labels;
    uint32_t col = 0, row = UINT32_MAX;
    if (b->cu_seqlens[0] != 0)
        return snprintf(msg, msgn, "cu_seqlens[0] %d", b->cu_seqlens[0]), -1;
    for (uint32_t i = 0; i < b->n_segments; i++) {
        uint32_t r = (uint32_t)elem(b->seg_rows, dt, i);
        int64_t len = elem(b->seq_lens, dt, i), pl = elem(b->prompt_lens, dt, i);
        if (r != row)
            col = 0;
        if (r >= b->B || (row != UINT32_MAX && r < row) || col + len > b->T)
            return snprintf(msg, msgn, "segment %u: row %u at column %u, %lld tokens", i, r,
                            col, (long long)len), -1;
        row = r;
        if (b->cu_seqlens[i + 1] != b->cu_seqlens[i] + len)
            return snprintf(msg, msgn, "cu_seqlens[%u] %d", i + 1, b->cu_seqlens[i + 1]), -1;
        for (int64_t k = 0; k < len; k++) {
            size_t at = (size_t)r * b->T + col + (size_t)k;
            int64_t want = k < pl ? -100 : elem(b->input_ids, dt, at);
            if (elem(b->position_ids, dt, at) != k || lab[at] != want)
                return snprintf(msg, msgn, "segment %u token %lld: position %lld, label %lld",
                                i, (long long)k, (long long)elem(b->position_ids, dt, at),
                                (long long)lab[at]), -1;
        }
        col += (uint32_t)len;
    }
    for (uint32_t i = 0; i < b->B; i++) {
        int64_t len = elem(b->lengths, dt, i);
        for (uint32_t t = 0; t < b->T; t++) {
            size_t k = (size_t)i * b->T + t;
            int on = (int64_t)t < len;
            if (elem(b->attention_mask, dt, k) != on ||
                (!on && (lab[k] != -100 || elem(b->input_ids, dt, k) != o->pad_id)))
                return snprintf(msg, msgn, "row %u position %u (length %lld): mask, padding or "
                                "label wrong", i, t, (long long)len), -1;
        }
    }
    return 0;
}

/* --check of a seq2seq batch: the source masked by lengths, the target
 * (labels, decoder mask) by target_lens, -100 after it. */
static int check_seq2seq(const ps_reader_options *o, const ps_batch *b, char *msg, size_t msgn)
{
    const int dt = b->dtype;
    const int64_t *lab = b->labels;
    for (uint32_t i = 0; i < b->B; i++) {
        int64_t len = elem(b->lengths, dt, i), tl = elem(b->target_lens, dt, i);
        for (uint32_t t = 0; t < b->T; t++) {
            size_t k = (size_t)i * b->T + t;
            int on = (int64_t)t < len;
            if (elem(b->attention_mask, dt, k) != on ||
                (!on && elem(b->input_ids, dt, k) != o->pad_id))
                return snprintf(msg, msgn, "row %u source position %u: mask or padding", i, t),
                       -1;
        }
        for (uint32_t t = 0; t < b->T_target; t++) {
            size_t k = (size_t)i * b->T_target + t;
            int on = (int64_t)t < tl;
            if (elem(b->decoder_attention_mask, dt, k) != on || (on ? lab[k] < 0 : lab[k] != -100))
                return snprintf(msg, msgn, "row %u target position %u: mask or label", i, t),
                       -1;
        }
    }
    return 0;
}

/* --check: what the header promises about a delivered batch, from its own
 * lengths. Returns 0, or -1 with the reason in msg. */
static int check_batch(const ps_reader *r, const ps_reader_options *o, const ps_batch *b,
                       char *msg, size_t msgn)
{
    if (b->layout == PS_LAYOUT_CAUSAL)
        return check_causal(o, b, msg, msgn);
    if (b->layout == PS_LAYOUT_SEQ2SEQ)
        return check_seq2seq(o, b, msg, msgn);
    const int dt = b->dtype;
    uint32_t bound = ps_reader_get_bucket_bound(r, b->bucket);
    uint32_t lower = b->bucket ? ps_reader_get_bucket_bound(r, b->bucket - 1) : 0;
    uint64_t mult = o->pad_multiple ? o->pad_multiple : 1;
    ps_reader_info info;
    ps_reader_get_info(r, &info);
    if (b->B == 0 || b->T == 0 || bound == 0) {
        snprintf(msg, msgn, "B %u, T %u, bucket %u (bound %u)", b->B, b->T, b->bucket, bound);
        return -1;
    }
    if (dt != o->dtype) {
        snprintf(msg, msgn, "dtype %d, asked for %d", dt, o->dtype);
        return -1;
    }
    int64_t maxlen = 0;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < b->B; i++) {
        int64_t len = elem(b->lengths, dt, i);
        if (len <= (int64_t)lower || len > (int64_t)bound || len > (int64_t)b->T) {
            snprintf(msg, msgn, "row %u: length %lld outside bucket %u (%u, %u] or T %u", i,
                     (long long)len, b->bucket, lower, bound, b->T);
            return -1;
        }
        if (len > maxlen)
            maxlen = len;
        sum += (uint64_t)len;
        int64_t label = elem(b->labels, PS_DTYPE_INT64, i);
        if (label < -1 || label >= (int64_t)info.n_labels) {
            snprintf(msg, msgn, "row %u: label %lld with %u labels", i, (long long)label,
                     info.n_labels);
            return -1;
        }
        int64_t prev_type = 0;
        for (uint32_t t = 0; t < b->T; t++) {
            size_t k = (size_t)i * b->T + t;
            int64_t m = elem(b->attention_mask, dt, k), ty = elem(b->token_type_ids, dt, k);
            int64_t id = elem(b->input_ids, dt, k);
            int on = (int64_t)t < len;
            if (m != on || (!on && (ty != 0 || id != o->pad_id)) ||
                (on && (ty < prev_type || ty > 1 || id < 0))) {
                snprintf(msg, msgn,
                         "row %u position %u (length %lld): input_id %lld, mask %lld, type %lld",
                         i, t, (long long)len, (long long)id, (long long)m, (long long)ty);
                return -1;
            }
            if (on)
                prev_type = ty;
        }
    }
    if (sum != b->real_tokens) {
        snprintf(msg, msgn, "real_tokens %llu, lengths add up to %llu",
                 (unsigned long long)b->real_tokens, (unsigned long long)sum);
        return -1;
    }
    uint64_t want = o->pad_mode == PS_PAD_BUCKET ? round_up(bound, mult)
                                                 : round_up((uint64_t)maxlen, mult);
    if (b->T != want) {
        snprintf(msg, msgn, "T %u, expected %llu (%s padding, longest %lld, bound %u)", b->T,
                 (unsigned long long)want, o->pad_mode == PS_PAD_BUCKET ? "bucket" : "longest",
                 (long long)maxlen, bound);
        return -1;
    }
    if (o->max_tokens && b->B > 1 && (uint64_t)b->B * b->T > o->max_tokens) {
        snprintf(msg, msgn, "B %u x T %u over --max-tokens %llu", b->B, b->T,
                 (unsigned long long)o->max_tokens);
        return -1;
    }
    if (o->batch_size && b->B > o->batch_size) {
        snprintf(msg, msgn, "B %u over --batch-size %u", b->B, o->batch_size);
        return -1;
    }
    if (o->drop_last && o->batch_size && b->B != o->batch_size) {
        snprintf(msg, msgn, "B %u with --drop-last and --batch-size %u", b->B, o->batch_size);
        return -1;
    }
    return 0;
}

static int load_state(const char *path, ps_reader_state *st)
{
    /* A regular file only (a FIFO as --resume would block forever), read
     * up to a state's size: more is not a state. */
    char *buf;
    size_t n;
    ps_error ferr = {0};
    int rc = ps_file_read_all(path, "reader state", PS_READER_STATE_BYTES, &buf, &n, &ferr);
    if (rc == PS_ELIMIT) {
        fprintf(stderr, "pairshard read: %s: more than %d bytes, a reader state is %d bytes\n",
                path, PS_READER_STATE_BYTES, PS_READER_STATE_BYTES);
        return -1;
    }
    if (rc) {
        fprintf(stderr, "pairshard read: %s\n", ferr.message);
        return -1;
    }
    if (n != PS_READER_STATE_BYTES) {
        free(buf);
        fprintf(stderr, "pairshard read: %s: %zu bytes, a reader state is %d bytes\n", path, n,
                PS_READER_STATE_BYTES);
        return -1;
    }
    ps_error err;
    ps_error_clear(&err);
    if (ps_reader_state_check(buf, n, &err) < 0) {
        free(buf);
        fprintf(stderr, "pairshard read: %s: %s\n", path, err.message);
        return -1;
    }
    memcpy(st->bytes, buf, PS_READER_STATE_BYTES);
    free(buf);
    return 0;
}

static int save_state(const char *path, const ps_reader *r)
{
    ps_reader_state st;
    ps_reader_get_state(r, &st);
    ps_error err;
    /* Whole or not at all: a kill mid-write must not leave a torn state
     * where the last good one was. */
    if (ps_outfile_write_all(path, st.bytes, sizeof st.bytes, &err)) {
        fprintf(stderr, "pairshard read: %s\n", err.message);
        return -1;
    }
    return 0;
}

int ps_cmd_read(int argc, char **argv)
{
    ps_reader_options o;
    ps_reader_options_init(&o);
    uint64_t limit = UINT64_MAX;
    const char *save_path = NULL, *resume_path = NULL;
    int labels = 0, tokens = 0, check = 0;

    ps_read_parser rp;
    ps_read_parser_init(&rp, "read", OWN_OPTS, N_OWN, &o);
    int c;
    while ((c = ps_read_getopt(&rp, argc, argv)) != -1) {
        switch (c) {
        case PS_READ_BAD_OPTION:
            return PS_EXIT_USAGE;
        case O_LIMIT:
            if (ps_args_u64("read", "limit", optarg, 0, UINT64_MAX >> 1, &limit))
                return PS_EXIT_USAGE;
            break;
        case O_SAVE:
            save_path = optarg;
            break;
        case O_RESUME:
            resume_path = optarg;
            break;
        case O_LABELS:
            labels = 1;
            break;
        case O_TOKENS:
            tokens = 1;
            break;
        case O_CHECK:
            check = 1;
            break;
        default:
            return ps_read_help_or_bad("read", c, argv, rp.longopts, USAGE);
        }
    }
    const char *dir;
    if (ps_read_finish(&rp, argc, argv, &dir))
        return PS_EXIT_USAGE;
    ps_error perr;
    const ps_path_use outs[] = {{"--save-state", save_path}};
    if (ps_outputs_check(outs, 1, NULL, 0, &perr)) {
        fprintf(stderr, "pairshard read: %s\n", perr.message);
        return PS_EXIT_USAGE;
    }

    ps_reader_state resume;
    if (resume_path && load_state(resume_path, &resume))
        return PS_EXIT_USAGE;

    ps_error err;
    ps_error_clear(&err);
    ps_reader *r = NULL;
    int rc = ps_reader_open_sets(rp.dirs, rp.n_dirs, &o, resume_path ? &resume : NULL, &r, &err);
    if (rc < 0) {
        fprintf(stderr, "pairshard read: %s\n", err.code ? err.message : ps_strerror(rc));
        return ps_read_open_status(rc);
    }

    int status = PS_EXIT_OK;
    uint64_t printed = 0;
    char msg[PS_ERROR_MESSAGE_MAX];
    while (printed < limit) {
        const ps_batch *b;
        ps_error_clear(&err);
        rc = ps_reader_next(r, &b, &err);
        if (rc == 0)
            break;
        if (rc < 0) {
            fprintf(stderr, "pairshard read: %s\n", err.code ? err.message : ps_strerror(rc));
            status = PS_EXIT_FAIL;
            break;
        }
        if (check && check_batch(r, &o, b, msg, sizeof msg)) {
            fprintf(stderr, "pairshard read: --check: epoch %llu step %llu bucket %u: %s\n",
                    (unsigned long long)b->epoch, (unsigned long long)b->step, b->bucket, msg);
            ps_batch_release(r, b);
            status = PS_EXIT_FAIL;
            break;
        }
        uint32_t bad_id = UINT32_MAX;
        json_t *j = batch_json(r, b, labels, tokens, &bad_id);
        char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(j);
        if (!text) {
            if (bad_id != UINT32_MAX)
                fprintf(stderr, "pairshard read: step %llu row %u: record id is not valid UTF-8\n",
                        (unsigned long long)b->step, bad_id);
            else
                fputs("pairshard read: out of memory\n", stderr);
            ps_batch_release(r, b);
            status = PS_EXIT_FAIL;
            break;
        }
        fputs(text, stdout);
        fputc('\n', stdout);
        free(text);
        ps_batch_release(r, b);
        printed++;
    }
    if (status == PS_EXIT_OK && save_path && save_state(save_path, r))
        status = PS_EXIT_USAGE;
    ps_reader_stats st;
    ps_reader_get_stats(r, &st);
    if (st.skipped_batches)
        fprintf(stderr,
                "pairshard read: skipped %llu batch(es), %llu record(s), that needed damaged "
                "blocks\n",
                (unsigned long long)st.skipped_batches, (unsigned long long)st.skipped_records);
    ps_reader_close(r);
    if (fflush(stdout) && status == PS_EXIT_OK) {
        fputs("pairshard read: write error\n", stderr);
        status = PS_EXIT_USAGE;
    }
    return status;
}
