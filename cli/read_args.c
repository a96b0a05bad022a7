/* The batching options shared by 'pairshard read' and 'pairshard bench-read'
 * (cli/read_args.h), so that both take the same flags and mean the same
 * batches by them. */
#include "cli/read_args.h"

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/opt_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct option ps_read_batching_longopts[] = {
    {"batch-size", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"max-tokens", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"pad", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"pad-multiple", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"pad-id", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"seed", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"epoch", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"shuffle-window", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"sort-pool", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"rank", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"world-size", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"no-shuffle", no_argument, NULL, PS_READ_BATCHING_OPT},
    {"drop-last", no_argument, NULL, PS_READ_BATCHING_OPT},
    {"threads", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"prefetch", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"int32", no_argument, NULL, PS_READ_BATCHING_OPT},
    {"device", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"require-device", no_argument, NULL, PS_READ_BATCHING_OPT},
    {"mlock", no_argument, NULL, PS_READ_BATCHING_OPT},
    {"skip-corrupt", no_argument, NULL, PS_READ_BATCHING_OPT},
    {"pack", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"skip-long", no_argument, NULL, PS_READ_BATCHING_OPT},
    {"decoder-start-id", required_argument, NULL, PS_READ_BATCHING_OPT},
    {"weights", required_argument, NULL, PS_READ_BATCHING_OPT},
};
const size_t ps_read_batching_longopts_count =
    sizeof ps_read_batching_longopts / sizeof ps_read_batching_longopts[0];

const char ps_read_batching_help[] =
    "Batching (the same flags give the same batches in 'read' and 'bench-read'):\n"
    "  --batch-size N         sequences per batch (default 32)\n"
    "  --max-tokens N         instead of --batch-size: a padded-token budget per batch,\n"
    "                         B * T <= N (a bucket's B is N / its padded bound; a\n"
    "                         sequence longer than N alone still gets a batch of 1)\n"
    "  --pad longest|bucket   pad to the batch's longest sequence (default) or to the\n"
    "                         bucket's bound (every batch of a bucket has the same T)\n"
    "  --pad-multiple M       round T up to a multiple of M (default 1)\n"
    "  --pad-id ID            input_ids value on padding (default 0, BERT's [PAD])\n"
    "  --seed S               shuffle seed (default 0)\n"
    "  --epoch E              epoch number: each epoch is a new shuffle (default 0)\n"
    "  --shuffle-window K     blocks per record-shuffle window (default 16; 128 with\n"
    "                         --pack)\n"
    "  --sort-pool K          consecutive batches of a bucket whose records are sorted\n"
    "                         by length before they are dealt out, so that a batch\n"
    "                         holds similar lengths (default 8; 1: off)\n"
    "  --weights NAME=W,...   a mixture: each epoch takes round(W * n) records of\n"
    "                         source NAME (n records; whole copies and a seeded subset,\n"
    "                         the same on every rank); a source not named keeps 1, 0\n"
    "                         leaves it out. Sources: 'pairshard inspect DIR'\n"
    "  --no-shuffle           bucket by bucket, blocks and records in stored order\n"
    "                         (each sort pool still sorted by length)\n"
    "  --rank R, --world-size W\n"
    "                         this rank's share: global batch g goes to rank g % W\n"
    "                         (default: RANK and WORLD_SIZE from the environment, as\n"
    "                         torchrun sets them, else 0 and 1)\n"
    "  --drop-last            every batch full; partial batches (and the last batches\n"
    "                         needed to make the count divisible by W) are dropped\n"
    "Layouts (the set's manifest says which; docs/READER.md, \"Layouts\"):\n"
    "  --pack L               causal sets: rows of exactly L tokens, each holding whole\n"
    "                         records from column 0 (best-fit decreasing per shuffle\n"
    "                         window); --batch-size then counts rows\n"
    "  --skip-long            with --pack: leave out (and count) records longer than L\n"
    "                         instead of refusing the set\n"
    "  --decoder-start-id N   seq2seq sets: also make decoder_input_ids (the labels\n"
    "                         shifted right, N first)\n"
    "Reading (never changes the batches):\n"
    "  --threads T            decoding threads (default 2)\n"
    "  --prefetch P           batch slots ahead of the consumer (default 4, at least 2)\n"
    "  --int32                int32 token arrays and lengths (labels stay int64)\n"
    "  --device N             also copy each batch to CUDA device N (host-only when\n"
    "                         pairshard has no CUDA or there is no GPU)\n"
    "  --require-device       fail instead of falling back to the host\n"
    "  --mlock                lock the batch slots in memory (best effort)\n"
    "  --skip-corrupt         deliver batches without the records of damaged blocks\n"
    "                         (and count them) instead of stopping\n";

enum {
    SEEN_BATCH_SIZE = 1u << 0,
    SEEN_MAX_TOKENS = 1u << 1,
};

/* Applies one shared option by long name. Returns 0, or -1 after printing
 * why. `seen` collects what was given, for ps_read_batching_finish. */
/* --weights NAME=W,...: kept for the process's life (the reader reads
 * them at open). Returns 0, or -1 after printing why. */
static int parse_weights(const char *cmd, const char *v, ps_reader_options *o)
{
    static char *spec;
    static const char **names;
    static double *w;
    free(spec);
    free(names);
    free(w);
    size_t n = 1;
    for (const char *p = v; *p; p++)
        n += *p == ',';
    spec = strdup(v);
    names = calloc(n, sizeof *names);
    w = calloc(n, sizeof *w);
    o->n_weights = 0;
    if (!spec || !names || !w) {
        fprintf(stderr, "pairshard %s: out of memory\n", cmd);
        return -1;
    }
    char *save = NULL;
    for (char *item = strtok_r(spec, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *end = NULL;
        if (eq) {
            *eq = '\0';
            w[o->n_weights] = strtod(eq + 1, &end);
        }
        if (!eq || eq == item || end == eq + 1 || *end) {
            fprintf(stderr, "pairshard %s: --weights: '%s' is not NAME=WEIGHT\n", cmd, item);
            return -1;
        }
        names[o->n_weights++] = item;
    }
    o->weight_names = names;
    o->weights = w;
    return 0;
}

int ps_read_batching_option(const char *cmd, const char *name, const char *v,
                            ps_reader_options *o, unsigned *seen)
{
    uint64_t x;
    if (!strcmp(name, "batch-size")) {
        if (ps_args_u64(cmd, name, v, 1, UINT32_MAX, &x))
            return -1;
        o->batch_size = (uint32_t)x;
        *seen |= SEEN_BATCH_SIZE;
    } else if (!strcmp(name, "max-tokens")) {
        if (ps_args_u64(cmd, name, v, 1, UINT64_MAX >> 1, &x))
            return -1;
        o->max_tokens = x;
        *seen |= SEEN_MAX_TOKENS;
    } else if (!strcmp(name, "pad")) {
        static const ps_args_choice pads[] = {{"longest", PS_PAD_LONGEST},
                                               {"bucket", PS_PAD_BUCKET}};
        int pad;
        if (ps_args_enum(cmd, name, v, pads, 2, &pad))
            return -1;
        o->pad_mode = pad;
    } else if (!strcmp(name, "pad-multiple")) {
        if (ps_args_u64(cmd, name, v, 1, 1u << 20, &x))
            return -1;
        o->pad_multiple = (uint32_t)x;
    } else if (!strcmp(name, "pad-id")) {
        if (ps_args_u64(cmd, name, v, 0, INT32_MAX, &x))
            return -1;
        o->pad_id = (int32_t)x;
    } else if (!strcmp(name, "seed")) {
        if (ps_args_u64(cmd, name, v, 0, UINT64_MAX, &x))
            return -1;
        o->seed = x;
    } else if (!strcmp(name, "epoch")) {
        if (ps_args_u64(cmd, name, v, 0, UINT64_MAX >> 1, &x))
            return -1;
        o->epoch = x;
    } else if (!strcmp(name, "shuffle-window")) {
        if (ps_args_u64(cmd, name, v, 1, UINT32_MAX, &x))
            return -1;
        o->shuffle_window = (uint32_t)x;
    } else if (!strcmp(name, "sort-pool")) {
        if (ps_args_u64(cmd, name, v, 1, UINT32_MAX, &x))
            return -1;
        o->sort_pool = (uint32_t)x;
    } else if (!strcmp(name, "rank")) {
        if (ps_args_u64(cmd, name, v, 0, 1u << 20, &x))
            return -1;
        o->rank = (int)x;
    } else if (!strcmp(name, "world-size")) {
        if (ps_args_u64(cmd, name, v, 1, 1u << 20, &x))
            return -1;
        o->world_size = (int)x;
    } else if (!strcmp(name, "no-shuffle")) {
        o->shuffle = 0;
    } else if (!strcmp(name, "drop-last")) {
        o->drop_last = 1;
    } else if (!strcmp(name, "threads")) {
        if (ps_args_u64(cmd, name, v, 1, 1024, &x))
            return -1;
        o->threads = (int)x;
    } else if (!strcmp(name, "prefetch")) {
        if (ps_args_u64(cmd, name, v, 2, 4096, &x))
            return -1;
        o->prefetch = (int)x;
    } else if (!strcmp(name, "int32")) {
        o->dtype = PS_DTYPE_INT32;
    } else if (!strcmp(name, "device")) {
        if (ps_args_u64(cmd, name, v, 0, 1024, &x))
            return -1;
        o->device = (int)x;
    } else if (!strcmp(name, "require-device")) {
        o->require_device = 1;
    } else if (!strcmp(name, "mlock")) {
        o->mlock = 1;
    } else if (!strcmp(name, "skip-corrupt")) {
        o->skip_corrupt = 1;
    } else if (!strcmp(name, "pack")) {
        if (ps_args_u64(cmd, name, v, 1, 1u << 24, &x))
            return -1;
        o->pack = (uint32_t)x;
    } else if (!strcmp(name, "skip-long")) {
        o->skip_long = 1;
    } else if (!strcmp(name, "weights")) {
        if (parse_weights(cmd, v, o))
            return -1;
    } else if (!strcmp(name, "decoder-start-id")) {
        if (ps_args_u64(cmd, name, v, 0, INT32_MAX, &x))
            return -1;
        o->decoder_start_id = (int32_t)x;
    } else {
        fprintf(stderr, "pairshard %s: unknown option '--%s'\n", cmd, name);
        return -1;
    }
    return 0;
}

/* Checks the combination. Returns 0 or -1 after printing why. */
int ps_read_batching_finish(const char *cmd, ps_reader_options *o, unsigned seen)
{
    if ((seen & SEEN_BATCH_SIZE) && (seen & SEEN_MAX_TOKENS)) {
        fprintf(stderr, "pairshard %s: give --batch-size or --max-tokens, not both\n", cmd);
        return -1;
    }
    if (seen & SEEN_MAX_TOKENS)
        o->batch_size = 0;
    if (o->skip_long && !o->pack) {
        fprintf(stderr, "pairshard %s: --skip-long needs --pack L\n", cmd);
        return -1;
    }
    if (o->require_device && o->device < 0) {
        fprintf(stderr, "pairshard %s: --require-device needs --device N\n", cmd);
        return -1;
    }
    return 0;
}

/* Exit status for a failed ps_reader_open: a set or state that cannot be
 * used as asked is the caller's to fix (2); running out of memory is not. */
int ps_read_open_status(int rc)
{
    return rc == PS_ENOMEM ? PS_EXIT_FAIL : PS_EXIT_USAGE;
}

size_t ps_read_longopts(struct option *out, size_t cap, const struct option *own, size_t n_own)
{
    size_t n = ps_read_batching_longopts_count;
    if (n + n_own + 1 > cap)
        return 0;
    memcpy(out, ps_read_batching_longopts, n * sizeof *out);
    memcpy(out + n, own, n_own * sizeof *out);
    memset(&out[n + n_own], 0, sizeof *out);
    return n + n_own;
}

int ps_read_help_or_bad(const char *cmd, int c, char **argv, const struct option *longopts,
                        const char *usage)
{
    if (c == 'h') {
        /* usage holds one "%s" (and no other conversion): the shared help. */
        const char *at = strstr(usage, "%s");
        if (!at) {
            fputs(usage, stdout);
        } else {
            fwrite(usage, 1, (size_t)(at - usage), stdout);
            fputs(ps_read_batching_help, stdout);
            fputs(at + 2, stdout);
        }
        return PS_EXIT_OK;
    }
    ps_opt_error(cmd, c, argv, longopts);
    return PS_EXIT_USAGE;
}

void ps_read_parser_init(ps_read_parser *p, const char *cmd, const struct option *own,
                         size_t n_own, ps_reader_options *o)
{
    p->cmd = cmd;
    p->o = o;
    p->seen = 0;
    p->idx = 0;
    ps_read_longopts(p->longopts, sizeof p->longopts / sizeof p->longopts[0], own, n_own);
    optind = 1;
    opterr = 0;
}

int ps_read_getopt(ps_read_parser *p, int argc, char **argv)
{
    int c;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "h", p->longopts, &p->idx)) ==
           PS_READ_BATCHING_OPT)
        if (ps_read_batching_option(p->cmd, p->longopts[p->idx].name, optarg, p->o, &p->seen))
            return PS_READ_BAD_OPTION;
    return c;
}

int ps_read_finish(ps_read_parser *p, int argc, char **argv, const char **dir)
{
    if (argc - optind < 1) {
        fprintf(stderr, "pairshard %s: expected DIR...\npairshard %s: see 'pairshard %s --help'\n",
                p->cmd, p->cmd, p->cmd);
        return -1;
    }
    *dir = argv[optind];
    p->dirs = (const char *const *)argv + optind;
    p->n_dirs = (size_t)(argc - optind);
    return ps_read_batching_finish(p->cmd, p->o, p->seen);
}
