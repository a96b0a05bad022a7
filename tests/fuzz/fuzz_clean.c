/*
 * Ingest + cleaning of untrusted record bytes. Built four times, with
 * FUZZ_FORMAT set to JSONL, JSON (one array), CSV and TSV: the input is
 * written to a file (the cleaner reads paths) and cleaned with a small rule
 * set, and every outcome is serialised as pairshard clean would write it.
 * Checks, besides memory safety: the accounting balances
 * (records_in = kept + rejected + duplicates, one callback per record),
 * kept fields are valid, NUL-free-terminated strings of the stated length.
 */
#include "pairshard/clean.h"
#include "tests/fuzz/fuzz_util.h"

#ifndef FUZZ_FORMAT
#define FUZZ_FORMAT JSONL
#endif
#define FUZZ_CAT(a, b) a##b
#define FUZZ_FMT(x) FUZZ_CAT(PS_FORMAT_, x)

static const char RULES[] =
    "[{\"name\":\"semi\",\"field\":\"sql\",\"replace\":\"\\\\s*;\\\\s*$\",\"with\":\"\"},"
    " {\"name\":\"q\",\"field\":\"question\",\"replace\":\"(?i)\\\\bplease\\\\b\",\"with\":\"\"},"
    " {\"name\":\"drop\",\"field\":\"both\",\"drop_if\":\"^DROP\\\\b\",\"flags\":\"i\"}]";

typedef struct tally {
    uint64_t calls, kept, rejected, dups;
} tally;

static int sink(void *user, const ps_clean_result *r)
{
    tally *t = user;
    t->calls++;
    if (r->outcome == PS_OUTCOME_KEPT) {
        t->kept++;
        if (!r->question || !r->sql || r->question[r->question_len] != '\0' ||
            r->sql[r->sql_len] != '\0' || r->question_len == 0 || r->sql_len == 0)
            abort();
    } else if (r->outcome == PS_OUTCOME_REJECTED) {
        t->rejected++;
        if (!r->reason || !r->detail)
            abort();
    } else {
        t->dups++;
        if (!r->duplicate_of)
            abort();
    }
    char *line = NULL;
    size_t len = 0;
    if (ps_clean_result_json(r, &line, &len) == 0) {
        if (strlen(line) != len || memchr(line, '\n', len))
            abort(); /* one JSON line per outcome */
        free(line);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *names[] = {"in.jsonl", "in.json", "in.csv", "in.tsv"};
    ps_format fmt = FUZZ_FMT(FUZZ_FORMAT);
    const char *path = fuzz_write(names[fmt - PS_FORMAT_JSONL], data, size);

    ps_clean_options o;
    ps_clean_options_init(&o);
    o.format = fmt;
    o.label_field = "db_id";
    /* Both UTF-8 policies and duplicate handling, chosen by the input. */
    o.utf8_policy = (size & 1) ? PS_UTF8_REPLACE : PS_UTF8_REJECT;
    o.keep_duplicates = (size & 2) != 0;
    o.sql_backslash_escapes = (size & 4) != 0;
    o.max_record_bytes = 64 << 10;
    ps_cleaner *c = NULL;
    ps_error err = {0};
    if (ps_cleaner_create(&o, &c, &err) != 0)
        abort();
    if (ps_cleaner_add_rules(c, RULES, sizeof RULES - 1, "fuzz-rules", &err) != 0)
        abort();
    tally t = {0};
    int rc = ps_cleaner_run(c, path, sink, &t, &err);
    FUZZ_CHECK_ERROR(rc, err);
    ps_clean_counts n;
    ps_cleaner_get_counts(c, &n);
    if (n.records_in != n.kept + n.rejected + n.duplicates || n.records_in != t.calls ||
        n.kept != t.kept || n.rejected != t.rejected || n.duplicates != t.dups)
        abort(); /* a record was lost or counted twice */
    char *stats = ps_cleaner_stats_json(c);
    free(stats);
    ps_cleaner_free(c);
    return 0;
}
