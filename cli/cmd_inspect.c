/* pairshard inspect: what a shard set holds, and (--verify) whether every
 * block of it reads back and agrees with the manifest. */
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/inspect_exec.h"
#include "cli/inspect_show.h"
#include "pairshard/preprocess.h"
#include "cli/opt_error.h"
#include "common/ps_internal.h"
#include "store/inspect.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


static const char USAGE[] =
    "usage: pairshard inspect DIR [--verify] [--json]\n"
    "       pairshard inspect DIR --show N [--vocab FILE | --tokenizer-json FILE]\n"
    "       pairshard inspect DIR --exec\n"
    "\n"
    "Summarises the shard set in DIR (written by 'pairshard build'): its shards\n"
    "(records, tokens, blocks, bytes on disk), its length buckets (records,\n"
    "tokens, and the padding if each record were padded to its bucket's bound),\n"
    "its labels, the compression ratio of the shard files (the records' bytes over\n"
    "the files' bytes, LMDB pages included, from the manifest), the tokenizer's\n"
    "vocabulary SHA-256 and the format version.\n"
    "\n"
    "  --verify    read and decode every block of every shard (zstd checksums)\n"
    "              and check it against the manifest: contiguous block keys per\n"
    "              bucket, records per block, lengths within the bucket bounds,\n"
    "              token ids below the vocabulary size, labels, all counts,\n"
    "              each shard file's SHA-256, and every sum of the accounting\n"
    "              (records_in = kept + rejected + duplicates, per label, per\n"
    "              input, per reason, kept = the records stored, per label).\n"
    "              Stops at the first problem and names the shard, the bucket\n"
    "              and block (or the manifest's field), and what is wrong;\n"
    "              adds the compression ratio of the zstd blocks alone\n"
    "  --json      print one JSON object instead of text\n"
    "  --show N    print the first N stored records instead, one JSON line each\n"
    "              (id, bucket, length, type_boundary, label, input_ids) and,\n"
    "              with the tokenizer the set was built with (its SHA-256 is\n"
    "              checked against the manifest's), \"text\": the ids decoded\n"
    "              back as HuggingFace's decode does, special tokens kept\n"
    "  --exec      print each record's execution fingerprints (a set built with\n"
    "              --execute), one JSON line each: id, before and after cleaning\n"
    "              (status, rows, hash), sql_changed; before x after on stderr\n"
    "  --vocab FILE, --tokenizer-json FILE\n"
    "              that tokenizer, for --show\n"
    "  -h, --help  this help\n"
    "\n"
    "Exit status: 0 fine, 1 --verify found corruption, 2 usage error or a set\n"
    "that cannot be read (no manifest, a malformed or newer-format manifest).\n";

static const struct option LONGOPTS[] = {
    {"verify", no_argument, NULL, 'v'},
    {"json", no_argument, NULL, 'j'},
    {"show", required_argument, NULL, 's'},
    {"exec", no_argument, NULL, 'e'},
    {"vocab", required_argument, NULL, 'V'},
    {"tokenizer-json", required_argument, NULL, 'T'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* What the summary shows, from the manifest and (with --verify) measured. */
typedef struct summary {
    const ps_manifest *m;
    const ps_verify_report *rep; /* NULL without --verify */
    int verified_ok;
    uint64_t records, tokens, blocks, disk_bytes;
    uint64_t *shard_disk;        /* per shard, bytes on disk (manifest's if missing) */
    ps_mf_count *buckets;        /* per bucket */
    /* Two compression ratios, on two bases: the blocks' content over the
     * shard files (LMDB pages and all; from the manifest, so inspect and
     * inspect --verify agree on it), and over the zstd blocks alone
     * (measured by --verify). */
    int have_files_ratio, have_blocks_ratio;
    uint64_t raw, file_bytes;          /* from the manifest */
    uint64_t block_raw, block_bytes;   /* measured */
} summary;

static int build_summary(summary *s, const char *dir)
{
    const ps_manifest *m = s->m;
    s->shard_disk = calloc(m->n_shards + 1, sizeof *s->shard_disk);
    s->buckets = calloc(m->n_buckets + 1, sizeof *s->buckets);
    if (!s->shard_disk || !s->buckets)
        return -1;
    size_t plen = strlen(dir) + 80;
    char *path = malloc(plen);
    if (!path)
        return -1;
    uint64_t raw = 0, mf_bytes = 0;
    int all_raw = 1;
    for (size_t k = 0; k < m->n_shards; k++) {
        const ps_mf_shard *ms = &m->shards[k];
        snprintf(path, plen, "%s/%s", dir, ms->file);
        struct stat st;
        s->shard_disk[k] = stat(path, &st) == 0 ? (uint64_t)st.st_size : ms->bytes;
        s->disk_bytes += s->shard_disk[k];
        s->records += ms->records;
        s->tokens += ms->tokens;
        s->blocks += ms->blocks;
        for (size_t b = 0; b < m->n_buckets; b++) {
            s->buckets[b].records += ms->buckets[b].records;
            s->buckets[b].tokens += ms->buckets[b].tokens;
            s->buckets[b].blocks += ms->buckets[b].blocks;
        }
        all_raw &= ms->has_uncompressed;
        raw += ms->uncompressed_bytes;
        mf_bytes += ms->bytes;
    }
    free(path);
    if (s->rep && s->rep->block_bytes && s->verified_ok) {
        s->have_blocks_ratio = 1;
        s->block_raw = s->rep->raw_bytes;
        s->block_bytes = s->rep->block_bytes;
    }
    if (all_raw && mf_bytes && m->n_shards) {
        s->have_files_ratio = 1;
        s->raw = raw;
        s->file_bytes = mf_bytes;
    }
    return 0;
}

static double ratio(uint64_t raw, uint64_t compressed)
{
    return compressed ? (double)raw / (double)compressed : 0.0;
}

static double padding_share(uint64_t records, uint64_t tokens, uint32_t bound)
{
    double padded = (double)records * bound;
    return padded > 0 ? 1.0 - (double)tokens / padded : 0.0;
}

/* Records of label i: measured with --verify, else the build's accounting. */
static int label_records(const summary *s, size_t i, uint64_t *n)
{
    if (s->rep && s->verified_ok) {
        *n = s->rep->label_records[i];
        return 1;
    }
    if (s->m->label_kept) {
        *n = s->m->label_kept[i];
        return 1;
    }
    return 0;
}

/* A count of a source's accounting, or -1 when not stated. */
static long long source_count(const ps_manifest *m, size_t i, const char *key)
{
    json_t *a = m->source_accounting ? m->source_accounting[i] : NULL;
    json_t *v = a ? json_object_get(a, key) : NULL;
    return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/* A set of several sources: each one's records (measured with --verify),
 * tokens and accounting. */
static void print_sources(const summary *s)
{
    const ps_manifest *m = s->m;
    if (!m->n_sources)
        return;
    printf("\nsources (%zu):\n  %-24s %10s %12s %10s %10s %10s\n", m->n_sources, "name",
           "records", "tokens", "records_in", "rejected", "duplicates");
    for (size_t i = 0; i < m->n_sources; i++) {
        uint64_t n = s->rep && s->verified_ok && s->rep->source_records
                         ? s->rep->source_records[i]
                         : m->source_counts[i].records;
        printf("  %-24s %10llu %12llu %10lld %10lld %10lld\n", m->source_names[i],
               (unsigned long long)n, (unsigned long long)m->source_counts[i].tokens,
               source_count(m, i, "records_in"), source_count(m, i, "rejected"),
               source_count(m, i, "duplicates"));
    }
}

static void print_text(const summary *s, const char *dir)
{
    const ps_manifest *m = s->m;
    printf("shard set %s: format version %d, layout %s", dir, m->format_version,
           ps_layout_name(m->layout));
    if (*m->tool_version)
        printf(", written by pairshard %s", m->tool_version);
    printf("\n  %zu shards, %llu records, %llu tokens, %llu blocks of up to %llu records, "
           "%llu bytes on disk\n",
           m->n_shards, (unsigned long long)s->records, (unsigned long long)s->tokens,
           (unsigned long long)s->blocks, (unsigned long long)m->block_records,
           (unsigned long long)s->disk_bytes);
    printf("  tokenizer: vocab sha256 %s, vocab size %llu, id width %d\n",
           *m->vocab_sha256 ? m->vocab_sha256 : "(not recorded)",
           (unsigned long long)m->vocab_size, m->id_width);
    if (s->have_files_ratio)
        printf("  compression: %.2fx of the shard files (%llu bytes of records / %llu bytes "
               "of files, LMDB pages included; from the manifest)\n",
               ratio(s->raw, s->file_bytes), (unsigned long long)s->raw,
               (unsigned long long)s->file_bytes);
    if (s->have_blocks_ratio)
        printf("  compression: %.2fx of the blocks alone (%llu bytes of records / %llu bytes "
               "of zstd blocks; measured by --verify)\n",
               ratio(s->block_raw, s->block_bytes), (unsigned long long)s->block_raw,
               (unsigned long long)s->block_bytes);
    if (m->zstd_level != -1000)
        printf("  zstd level %d\n", m->zstd_level);
    if (m->append_eos == 1 && m->eos_id >= 0)
        printf("  completions end in EOS (id %lld) unless their text ends in a special token\n",
               (long long)m->eos_id);
    else if (m->append_eos == 1)
        printf("  completions end in the special token their template's text ends in\n");
    else if (m->append_eos == 0)
        printf("  completions end as their text does: no EOS appended (--no-append-eos)\n");

    printf("\nshards:\n  %-20s %10s %12s %8s %12s\n", "file", "records", "tokens", "blocks",
           "bytes");
    for (size_t k = 0; k < m->n_shards; k++) {
        const ps_mf_shard *ms = &m->shards[k];
        printf("  %-20s %10llu %12llu %8llu %12llu\n", ms->file, (unsigned long long)ms->records,
               (unsigned long long)ms->tokens, (unsigned long long)ms->blocks,
               (unsigned long long)s->shard_disk[k]);
    }
    printf("\nbuckets:\n  %6s %6s %10s %12s %14s %8s\n", "bucket", "bound", "records", "tokens",
           "tokens_padded", "padding");
    for (size_t b = 0; b < m->n_buckets; b++) {
        const ps_mf_count *c = &s->buckets[b];
        printf("  %6zu %6u %10llu %12llu %14llu %7.1f%%\n", b, m->bounds[b],
               (unsigned long long)c->records, (unsigned long long)c->tokens,
               (unsigned long long)(c->records * m->bounds[b]),
               100.0 * padding_share(c->records, c->tokens, m->bounds[b]));
    }
    printf("\nlabels (%zu):\n", m->n_labels);
    for (size_t i = 0; i < m->n_labels; i++) {
        uint64_t n;
        if (label_records(s, i, &n))
            printf("  %-32s %10llu\n", m->labels[i], (unsigned long long)n);
        else
            printf("  %s\n", m->labels[i]);
    }
    if (s->rep && s->verified_ok && s->rep->unlabeled)
        printf("  %-32s %10llu\n", "(unlabeled)", (unsigned long long)s->rep->unlabeled);
    print_sources(s);
}

#define I(x) ((json_int_t)(x))

static json_t *summary_json(const summary *s, const char *dir, const ps_error *verr)
{
    const ps_manifest *m = s->m;
    json_t *o = json_object();
    json_object_set_new(o, "dir", json_string(dir));
    json_object_set_new(o, "format_version", json_integer(m->format_version));
    json_object_set_new(o, "layout", json_string(ps_layout_name(m->layout)));
    if (m->append_eos >= 0)
        json_object_set_new(o, "append_eos", json_boolean(m->append_eos));
    json_object_set_new(o, "tool_version", json_string(m->tool_version));
    json_object_set_new(o, "tokenizer",
                        json_pack("{sssIsi}", "vocab_sha256", m->vocab_sha256, "vocab_size",
                                  I(m->vocab_size), "id_width", m->id_width));
    json_object_set_new(o, "block_records", json_integer(I(m->block_records)));
    if (m->zstd_level != -1000)
        json_object_set_new(o, "zstd_level", json_integer(m->zstd_level));
    json_object_set_new(o, "records", json_integer(I(s->records)));
    json_object_set_new(o, "tokens", json_integer(I(s->tokens)));
    json_object_set_new(o, "blocks", json_integer(I(s->blocks)));
    json_object_set_new(o, "bytes_on_disk", json_integer(I(s->disk_bytes)));
    if (s->have_files_ratio)
        json_object_set_new(o, "compression",
                            json_pack("{sIsIsfss}", "uncompressed_bytes", I(s->raw),
                                      "compressed_bytes", I(s->file_bytes), "ratio",
                                      ratio(s->raw, s->file_bytes), "basis", "files"));
    if (s->have_blocks_ratio)
        json_object_set_new(o, "compression_blocks",
                            json_pack("{sIsIsfss}", "uncompressed_bytes", I(s->block_raw),
                                      "compressed_bytes", I(s->block_bytes), "ratio",
                                      ratio(s->block_raw, s->block_bytes), "basis", "blocks"));
    json_t *shards = json_array();
    for (size_t k = 0; k < m->n_shards; k++) {
        const ps_mf_shard *ms = &m->shards[k];
        json_array_append_new(shards, json_pack("{sssIsIsIsI}", "file", ms->file, "records",
                                                I(ms->records), "tokens", I(ms->tokens),
                                                "blocks", I(ms->blocks), "bytes",
                                                I(s->shard_disk[k])));
    }
    json_object_set_new(o, "shards", shards);
    json_t *buckets = json_array();
    for (size_t b = 0; b < m->n_buckets; b++) {
        const ps_mf_count *c = &s->buckets[b];
        json_array_append_new(
            buckets, json_pack("{sIsIsIsIsIsIsf}", "bucket", I(b), "bound", I(m->bounds[b]),
                               "records", I(c->records), "tokens", I(c->tokens), "blocks",
                               I(c->blocks), "tokens_padded", I(c->records * m->bounds[b]),
                               "padding", padding_share(c->records, c->tokens, m->bounds[b])));
    }
    json_object_set_new(o, "buckets", buckets);
    json_t *labels = json_array();
    for (size_t i = 0; i < m->n_labels; i++) {
        uint64_t n;
        json_t *l = json_pack("{sIss}", "id", I(i), "name", m->labels[i]);
        json_object_set_new(l, "records", label_records(s, i, &n) ? json_integer(I(n)) : json_null());
        json_array_append_new(labels, l);
    }
    json_object_set_new(o, "labels", labels);
    if (m->n_sources) { /* a set of several sources */
        json_t *src = json_array();
        for (size_t i = 0; i < m->n_sources; i++)
            json_array_append_new(src, json_pack("{sssIsI}", "name", m->source_names[i],
                                                 "records", I(m->source_counts[i].records),
                                                 "tokens", I(m->source_counts[i].tokens)));
        json_object_set_new(o, "sources", src);
    }
    json_object_set_new(o, "label_counts",
                        json_string(s->rep && s->verified_ok ? "measured"
                                    : m->label_kept          ? "accounting"
                                                             : "unknown"));
    if (s->rep && s->verified_ok)
        json_object_set_new(o, "unlabeled", json_integer(I(s->rep->unlabeled)));
    if (s->rep) {
        json_t *v = json_pack("{sb}", "ok", s->verified_ok);
        if (!s->verified_ok) {
            const ps_verify_report *r = s->rep;
            json_object_set_new(v, "error", json_string(verr->message));
            json_object_set_new(v, "kind", json_string(r->kind ? r->kind : "unknown"));
            if (r->bad_shard >= 0)
                json_object_set_new(v, "shard", json_string(m->shards[r->bad_shard].file));
            if (r->bad_bucket >= 0)
                json_object_set_new(v, "bucket", json_integer(r->bad_bucket));
            if (r->bad_block >= 0)
                json_object_set_new(v, "block", json_integer(r->bad_block));
        }
        json_object_set_new(o, "verify", v);
    }
    return o;
}

/* The files a set embeds for serving (DIR/preprocess/): opening its
 * preprocessor checks each against the manifest's SHA-256. Only damage
 * counts (PS_ECORRUPT); a set without them, or one the preprocessor does
 * not serve (dialogues), has nothing to check here. */
static int verify_preprocess(const char *dir, ps_error *err)
{
    ps_preprocessor *p = NULL;
    int rc = ps_preprocessor_open(dir, &p, err);
    ps_preprocessor_free(p);
    if (rc != PS_ECORRUPT)
        ps_error_clear(err);
    return rc == PS_ECORRUPT ? rc : 0;
}

/* --show: exit 0, 1 (a damaged shard) or 2 (usage, the wrong tokenizer). */
static int show_records(const char *dir, ps_manifest *m, uint64_t n, const char *vocab,
                        const char *tok_json)
{
    ps_error err;
    ps_error_clear(&err);
    ps_tokenizer *tok = NULL;
    int rc = vocab || tok_json ? ps_inspect_load_tokenizer(m, vocab, tok_json, &tok, &err) : 0;
    int status = rc ? PS_EXIT_USAGE : PS_EXIT_OK;
    if (!rc && (rc = ps_inspect_show(dir, m, n > SIZE_MAX ? SIZE_MAX : (size_t)n, tok, &err)))
        status = rc == PS_ECORRUPT ? PS_EXIT_FAIL : PS_EXIT_USAGE;
    if (rc)
        fprintf(stderr, "pairshard inspect: %s\n", err.message);
    if (fflush(stdout) && status == PS_EXIT_OK) {
        fprintf(stderr, "pairshard inspect: write error\n");
        status = PS_EXIT_USAGE;
    }
    ps_tokenizer_free(tok);
    ps_manifest_free(m);
    return status;
}

int ps_cmd_inspect(int argc, char **argv)
{
    int verify = 0, as_json = 0, exec = 0, c;
    uint64_t show_n = 0;
    const char *vocab = NULL, *tok_json = NULL;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "h", LONGOPTS, NULL)) != -1) {
        switch (c) {
        case 'v':
            verify = 1;
            break;
        case 'j':
            as_json = 1;
            break;
        case 'e':
            exec = 1;
            break;
        case 's':
            if (ps_args_u64("inspect", "show", optarg, 1, UINT64_MAX, &show_n))
                return PS_EXIT_USAGE;
            break;
        case 'V':
            vocab = optarg;
            break;
        case 'T':
            tok_json = optarg;
            break;
        case 'h':
            fputs(USAGE, stdout);
            return PS_EXIT_OK;
        default:
            ps_opt_error("inspect", c, argv, LONGOPTS);
            return PS_EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fputs("pairshard inspect: expected one DIR\n"
              "pairshard inspect: see 'pairshard inspect --help'\n", stderr);
        return PS_EXIT_USAGE;
    }
    if ((vocab || tok_json) && !show_n) {
        fputs("pairshard inspect: --vocab and --tokenizer-json go with --show\n", stderr);
        return PS_EXIT_USAGE;
    }
    if (vocab && tok_json) {
        fputs("pairshard inspect: give --vocab or --tokenizer-json, not both\n", stderr);
        return PS_EXIT_USAGE;
    }
    const char *dir = argv[optind];
    ps_manifest *m = NULL;
    ps_error err;
    ps_error_clear(&err);
    if (exec) {
        int rc = ps_inspect_exec(dir, &err);
        if (rc)
            fprintf(stderr, "pairshard inspect: %s\n", err.message);
        if (fflush(stdout) && !rc)
            return PS_EXIT_USAGE;
        return !rc ? PS_EXIT_OK : rc == PS_ECORRUPT ? PS_EXIT_FAIL : PS_EXIT_USAGE;
    }
    if (ps_manifest_read(dir, &m, &err)) {
        fprintf(stderr, "pairshard inspect: %s\n", err.message);
        return PS_EXIT_USAGE;
    }
    if (show_n)
        return show_records(dir, m, show_n, vocab, tok_json);
    ps_verify_report rep;
    memset(&rep, 0, sizeof rep);
    ps_error verr;
    ps_error_clear(&verr);
    int vrc = 0, status = PS_EXIT_OK;
    if (verify) {
        vrc = ps_set_verify(dir, m, &rep, &verr);
        if (vrc && vrc != PS_ECORRUPT) {
            fprintf(stderr, "pairshard inspect: %s\n", verr.message);
            ps_verify_report_free(&rep);
            ps_manifest_free(m);
            return PS_EXIT_USAGE;
        }
        if (!vrc && (vrc = verify_preprocess(dir, &verr)) != 0)
            rep.kind = "preprocess";
        status = vrc ? PS_EXIT_FAIL : PS_EXIT_OK;
    }
    summary s = {.m = m, .rep = verify ? &rep : NULL, .verified_ok = verify && !vrc};
    if (build_summary(&s, dir)) {
        fprintf(stderr, "pairshard inspect: out of memory\n");
        status = PS_EXIT_USAGE;
    } else if (as_json) {
        json_t *o = summary_json(&s, dir, &verr);
        char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        if (text)
            printf("%s\n", text);
        else
            status = PS_EXIT_USAGE;
        free(text);
        json_decref(o);
    } else {
        print_text(&s, dir);
        if (verify)
            printf("\nverify: %s\n", vrc ? "FAILED" : "ok, every block decoded and matches the manifest");
    }
    if (vrc)
        fprintf(stderr, "pairshard inspect: corrupt (%s): %s\n", rep.kind ? rep.kind : "unknown",
                verr.message);
    if (fflush(stdout) && status == PS_EXIT_OK) {
        fprintf(stderr, "pairshard inspect: write error\n");
        status = PS_EXIT_USAGE;
    }
    free(s.shard_disk);
    free(s.buckets);
    ps_verify_report_free(&rep);
    ps_manifest_free(m);
    return status;
}
