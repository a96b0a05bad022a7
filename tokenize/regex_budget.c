/*
 * The step budget of the tokenizer.json regexes (Split, Replace) on one
 * text. PCRE2's match limit bounds one pcre2_match call, but a text is
 * searched by many calls (one per match), and a pattern that is only
 * polynomially slow (a*a*a*a*c|. : each call a few million steps, one call
 * per character) stays under any per-call limit while a record of 60 kB
 * takes minutes. So each encode gets a budget proportional to its text,
 * spent across all its calls: ps_tok_regex_find gives each call a small
 * limit first and doubles it while the call runs out, charging every limit
 * that ran out (steps really spent). A call that fits its first limit is
 * free, so ordinary patterns never touch the budget; one whose doublings
 * reach the budget's end fails with PS_ELIMIT, and the encode names the
 * component (ps_tok_regex_why). The count is PCRE2's own, so whether a text
 * fits does not depend on the machine's speed or load; the budget is per
 * thread (an encode runs on one thread).
 */
#include "tokenize/hf.h"

#include <stdarg.h>
#include <stdio.h>

/* Steps per byte of text, and a floor for short texts: ordinary patterns
 * use a few steps per byte and fit each call's first limit anyway. */
#define STEPS_PER_BYTE 250u
#define STEPS_FLOOR 1000000u

static _Thread_local struct {
    bool armed;
    uint64_t left, budget;
    size_t bytes;
    char why[256];
} tl;

void ps_tok_regex_budget_begin(size_t bytes)
{
    tl.armed = true;
    tl.bytes = bytes;
    tl.budget = tl.left = STEPS_FLOOR + (uint64_t)STEPS_PER_BYTE * bytes;
    tl.why[0] = '\0';
}

void ps_tok_regex_budget_end(void) { tl.armed = false; }

uint64_t ps_tok_regex_budget_take(uint64_t want)
{
    if (!tl.armed) /* outside an encode (a decoder): one floor per call */
        return want < STEPS_FLOOR ? want : STEPS_FLOOR;
    return want < tl.left ? want : tl.left;
}

void ps_tok_regex_budget_spend(uint64_t steps)
{
    if (tl.armed)
        tl.left -= steps < tl.left ? steps : tl.left;
}

int ps_tok_regex_fail(const char *where, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (tl.armed)
        snprintf(tl.why, sizeof tl.why, "%s: %s (budget %llu steps for a text of %zu bytes)",
                 where, what, (unsigned long long)tl.budget, tl.bytes);
    else
        snprintf(tl.why, sizeof tl.why, "%s: %s", where, what);
    return PS_ELIMIT;
}

const char *ps_tok_regex_why(void) { return tl.why[0] ? tl.why : NULL; }
