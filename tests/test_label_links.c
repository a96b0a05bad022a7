/* A chunk's repeated labels, linked by its worker (ingest/label_links.c):
 * every record points at the first earlier record of the chunk with the
 * same label, compared as strings (a brute-force reference decides), and
 * the accounting numbers a record through that link as it would by
 * looking its label up. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ingest/ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Items as the build keeps them: a ps_clean_item first, more after it. */
typedef struct wide {
    ps_clean_item it;
    char tail[40];
} wide;

/* label_as as defined: 1 + the first earlier index with the same label. */
static uint32_t reference(const wide *w, size_t i)
{
    const char *l = w[i].it.res.label;
    if (!l)
        return 0;
    for (size_t j = 0; j < i; j++)
        if (w[j].it.res.label && strcmp(w[j].it.res.label, l) == 0)
            return (uint32_t)j + 1;
    return 0;
}

static void check_links(wide *w, size_t n, ps_label_links *l)
{
    for (size_t i = 0; i < n; i++)
        w[i].it.label_as = 12345; /* stale, from a chunk before */
    ps_label_links_set(l, w, sizeof *w, n);
    for (size_t i = 0; i < n; i++)
        if (w[i].it.label_as != reference(w, i))
            fail_msg("record %zu (label %s): label_as %u, want %u", i,
                     w[i].it.res.label ? w[i].it.res.label : "(none)", w[i].it.label_as,
                     reference(w, i));
}

/* Chunks of every size up to 300 records, over labels that repeat, do
 * not, differ in one byte or by a prefix, are empty or absent; the table
 * is reused from chunk to chunk, larger and smaller. */
static void test_links_match_the_reference(void **state)
{
    (void)state;
    enum { N = 5000 };
    static char names[N][24];
    wide *w = calloc(N, sizeof *w);
    assert_non_null(w);
    ps_label_links l = {NULL, 0};
    unsigned seed = 7;
    for (size_t n = 0; n <= 300; n += n < 20 ? 1 : 37) {
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = (seed >> 8) % 100;
            if (r < 10) {
                w[i].it.res.label = NULL;
            } else {
                /* few distinct labels mostly, some prefixes of others */
                snprintf(names[i], sizeof names[i], r < 80 ? "db_%u" : "db_%u_x", (seed >> 16) % 9);
                if (r >= 95)
                    names[i][0] = '\0';
                w[i].it.res.label = names[i];
            }
        }
        check_links(w, n, &l);
    }
    /* many distinct labels (the table fills, probes run long), each twice */
    for (size_t i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "label-%zu", i % (N / 2));
        w[i].it.res.label = names[i];
    }
    check_links(w, N, &l);
    for (size_t i = N / 2; i < N; i++)
        assert_int_equal(w[i].it.label_as, i - N / 2 + 1);
    ps_label_links_free(&l);
    free(w);
}

/* The accounting numbers a record the same through a known number as
 * through its label's lookup, and a number it does not hold yet falls
 * back to the lookup. */
static void test_known_number_counts_alike(void **state)
{
    (void)state;
    ps_stats *a, *b;
    assert_int_equal(ps_stats_create(&a), 0);
    assert_int_equal(ps_stats_create(&b), 0);
    static const char *labels[] = {"x", "y", "x", "z", "y", "x"};
    uint32_t na[6], nb[6];
    for (int i = 0; i < 6; i++) {
        ps_outcome o = i % 2 ? PS_OUTCOME_REJECTED : PS_OUTCOME_KEPT;
        assert_int_equal(ps_stats_record(a, "in.jsonl", o, "empty_field", labels[i], &na[i]), 0);
        uint32_t known = PS_LABEL_NO_NONE;
        for (int j = 0; j < i; j++)
            if (strcmp(labels[j], labels[i]) == 0) {
                known = nb[j];
                break;
            }
        assert_int_equal(ps_stats_record_known(b, "in.jsonl", o, "empty_field", labels[i],
                                               known, &nb[i]),
                         0);
        assert_int_equal(na[i], nb[i]);
    }
    assert_int_equal(na[0], 0);
    assert_int_equal(na[3], 2);
    /* a number past those held: looked up (and added) as without one */
    uint32_t n;
    assert_int_equal(ps_stats_record_known(b, "in.jsonl", PS_OUTCOME_KEPT, NULL, "w", 99, &n), 0);
    assert_int_equal(n, 3);
    ps_stats_free(a);
    ps_stats_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_links_match_the_reference),
        cmocka_unit_test(test_known_number_counts_alike),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
