/* pairshard merge: join the partial sets of a --part build into one set. */
#include "cli/commands.h"
#include "cli/opt_error.h"
#include "cli/signals.h"
#include "pipeline/beside.h"
#include "pipeline/build.h"

#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const char USAGE[] =
    "usage: pairshard merge -o DIR PART_DIR...\n"
    "       pairshard merge -o DIR [--rename OLD=NEW]... SET_DIR...\n"
    "\n"
    "Publishes the partial sets built with 'pairshard build --part K/N' (all N of\n"
    "them, in order 0..N-1) as one shard set at DIR, atomically. The parts must\n"
    "come from one build: same inputs and options. Shards are renumbered in part\n"
    "order, label vocabularies united (label ids re-encoded where they change),\n"
    "and the accounting summed. Parts built with automatic buckets (each chose its\n"
    "own bounds) are rewritten under the bounds the whole build would choose.\n"
    "\n"
    "Given whole sets (not parts), it joins them: sets built apart (other inputs,\n"
    "templates, cleaning) with the same tokenizer, layout and block size become one\n"
    "set whose records keep their source: each set's own sources, or the set as\n"
    "one source named after its directory (manifest \"sources\", with each one's\n"
    "records, tokens and accounting). Read it with weights per source\n"
    "(pairshard read --weights, Loader(weights=...)).\n"
    "\n"
    "  -o, --output DIR   the merged set: a missing or empty directory, or an\n"
    "                     existing shard set (as for build -o)\n"
    "      --force        replace DIR even when it is a directory of other files:\n"
    "                     DELETES THEM (never a link, a non-directory, or a DIR\n"
    "                     holding a part or the current directory)\n"
    "      --no-gate      publish even when a validation check fails\n"
    "      --rename OLD=NEW  joining: call source OLD (the last so named) NEW; two\n"
    "                     sources of one name are refused without it\n"
    "  -q, --quiet        no summary on stderr\n"
    "\n"
    "Each part is read as one snapshot and verified first, as 'inspect --verify'\n"
    "does (blocks, counts, SHA-256, the accounting's sums): a part that is damaged,\n"
    "whose sums do not add up, or that is rebuilt or written while the merge reads\n"
    "it is refused naming it, exit status 2, nothing published.\n"
    "\n"
    "The parts' statistics are added up and the merged set validated as a whole\n"
    "with the build's thresholds (report.json, report.html, stats.json in DIR).\n"
    "\n"
    "DIR is replaced only when it is missing, empty or a shard set; anything else\n"
    "is refused with exit status 2 and left untouched. SIGINT, SIGTERM or SIGHUP\n"
    "stop the merge, remove its staging directory and leave DIR unchanged (or,\n"
    "after the swap, the complete new set).\n"
    "\n"
    "Exit status: 0 merged, 1 a check failed (nothing published), 2 usage error,\n"
    "parts that do not belong together or a part refused, 128+N stopped by signal N.\n";

static int run_merge(int argc, char **argv, const char **from, const char **to, char **owned)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"no-gate", no_argument, NULL, 'G'},
        {"force", no_argument, NULL, 'F'},
        {"rename", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    int quiet = 0, c, rc_early = 0;
    char *summary = NULL;
    ps_merge_opts mo = {.summary = &summary, .cancel = &ps_cli_stop_signal};
    mo.rename_from = from;
    mo.rename_to = to;
    ps_cli_signals_install();
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, PS_OPT_QUIET "o:qh", opts, NULL)) != -1) {
        if (c == 'o')
            out = optarg;
        else if (c == 'q')
            quiet = 1;
        else if (c == 'G')
            mo.no_gate = 1;
        else if (c == 'F')
            mo.force = 1;
        else if (c == 'R') {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1]) {
                fprintf(stderr, "pairshard merge: --rename %s: expected OLD=NEW\n", optarg);
                rc_early = PS_EXIT_USAGE;
                break;
            }
            if (!(owned[mo.n_rename] = strndup(optarg, (size_t)(eq - optarg)))) {
                rc_early = PS_EXIT_USAGE;
                break;
            }
            from[mo.n_rename] = owned[mo.n_rename];
            to[mo.n_rename++] = eq + 1;
        }
        else if (c == 'h') {
            fputs(USAGE, stdout);
            return PS_EXIT_OK;
        } else {
            ps_opt_error("merge", c, argv, opts);
            return PS_EXIT_USAGE;
        }
    }
    if (rc_early)
        return rc_early;
    if (!out || optind >= argc) {
        fputs("pairshard merge: needs -o DIR and the part directories\n", stderr);
        return PS_EXIT_USAGE;
    }
    ps_error err;
    ps_error_clear(&err);
    /* a merge the gate stops writes its report beside DIR: not into a part */
    if (!mo.no_gate && ps_beside_outputs_check(out, NULL, 0, &err)) {
        fprintf(stderr, "pairshard merge: %s\n", err.message);
        return PS_EXIT_USAGE;
    }
    int rc = ps_merge_run(out, (const char *const *)argv + optind, (size_t)(argc - optind), &mo,
                          &err);
    if (ps_cli_stop_signal) {
        fprintf(stderr, "pairshard merge: stopped by signal %d: %s\n", (int)ps_cli_stop_signal,
                rc ? "nothing was published" : "the merged set had already been published");
        free(summary);
        return ps_cli_signal_status(ps_cli_stop_signal);
    }
    if (rc) {
        fprintf(stderr, "pairshard merge: %s\n", err.code ? err.message : "failed");
        return PS_EXIT_USAGE;
    }
    if (summary && (!quiet || mo.gate_failed))
        fputs(summary, stderr);
    free(summary);
    if (mo.gate_failed) {
        fprintf(stderr, "pairshard merge: validation failed: nothing was published; the report "
                        "is beside %s (--no-gate publishes anyway)\n", out);
        return PS_EXIT_FAIL;
    }
    if (!quiet)
        fprintf(stderr, "pairshard merge: %d parts -> %s\n", argc - optind, out);
    return PS_EXIT_OK;
}

int ps_cmd_merge(int argc, char **argv)
{
    /* --rename OLD=NEW pairs: at most one per argument */
    const char **from = calloc((size_t)argc + 1, sizeof *from);
    const char **to = calloc((size_t)argc + 1, sizeof *to);
    char **owned = calloc((size_t)argc + 1, sizeof *owned);
    int rc = PS_EXIT_USAGE;
    if (from && to && owned)
        rc = run_merge(argc, argv, from, to, owned);
    else
        fputs("pairshard merge: out of memory\n", stderr);
    for (int i = 0; owned && i < argc; i++)
        free(owned[i]);
    free(from);
    free(to);
    free(owned);
    return rc;
}
