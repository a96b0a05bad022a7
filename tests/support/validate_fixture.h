/* validate/'s tests' fixture (tests/support/validate_fixture.c). */
#ifndef PS_TEST_VALIDATE_FIXTURE_H
#define PS_TEST_VALIDATE_FIXTURE_H

#include "report/report.h"
#include "tests/support/testutil.h"
#include "validate/vinternal.h"

#include <stdbool.h>
#include <stdint.h>

/* A synthetic build: records with labels L0..L{nl-1}, question and sql
 * lengths drawn around 60 and 120; `mut` may change the outcome/after. */
typedef struct synth {
    ps_vstats *raw, *cl, *tok;
    ps_vpaired *p;
} synth;

typedef struct synth_rec {
    const char *label;
    uint32_t qb, sb, qa, sa, tokens, unk;
    bool truncated;
    ps_outcome outcome;
    const char *reason, *rule;
    const char *hard_before, *hard_after; /* hardness levels; hard_after NULL: hard_before */
} synth_rec;

/* Five label names, L0..L4. */
extern const char *const LABELS[5];
/* Spider's four hardness classes. */
extern const char *const HARDNESS[4];

uint32_t rnd(void);

ps_vrecord rec(const char *label, uint32_t q, uint32_t s, uint32_t t);

char *json_text(json_t *j);

const ps_vcheck *check_of(const ps_vreport *r, const char *name);

int verdict(const ps_vreport *r, const char *name);

void assert_explains(const ps_vreport *r, const char *name, const char *needle);
/* The check failed, and its explanation holds needle. */
void assert_fails_explained(const ps_vreport *r, const char *name, const char *needle);

/* A text of n ASCII characters. */
const char *text(size_t n);

void synth_init(synth *s);

void synth_add(synth *s, const synth_rec *r);

/* n records over 5 labels and 4 hardness classes, unchanged by cleaning,
 * all kept. */
synth_rec plain(size_t i);

/* synth_init, then plain(0) .. plain(n-1) added. */
void synth_plain(synth *s, size_t n);

ps_vreport *synth_build(synth *s, const ps_vconfig *c);

void synth_free(synth *s);

#endif
