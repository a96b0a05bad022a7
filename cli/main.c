/* pairshard — the command-line front end: dispatches to a subcommand. */
#include "cli/commands.h"
#include "pairshard/pairshard.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"build", ps_cmd_build, "clean, tokenize and write length-bucketed LMDB shards"},
    {"merge", ps_cmd_merge, "join the partial sets of a --part build into one set"},
    {"inspect", ps_cmd_inspect, "summarise a shard set; --verify checks every block"},
    {"read", ps_cmd_read, "stream a shard set as padded batches, one JSON line each"},
    {"bench-read", ps_cmd_bench_read, "measure the reader's throughput against a memcpy bound"},
    {"validate", ps_cmd_validate, "compare two saved statistics files with the checks"},
    {"clean", ps_cmd_clean, "ingest raw pairs and write cleaned JSONL records"},
    {"tokenize", ps_cmd_tokenize, "encode cleaned records with a vocab.txt or any tokenizer.json"},
    {"bench-tokenize", ps_cmd_bench_tokenize, "measure tokenizer throughput in memory"},
    {"leakage", ps_cmd_leakage, "what training files or sets share with held-out sets"},
    {"version", ps_cmd_version, "print versions of pairshard and its libraries"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: pairshard <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-16s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'pairshard <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return PS_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return PS_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version"))
        return ps_cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "pairshard: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return PS_EXIT_USAGE;
}
