/*
 * The preset templates, as template texts (docs/CLEANING.md, "Text-to-SQL
 * inputs: templates", shows each one's exact output), and PICARD's SQL
 * normalisation, the one template option.
 */
#include "schema/template_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct preset {
    const char *name, *prompt, *completion;
} preset;

static const preset PRESETS[] = {
    /* today's pair: the question is segment A, the SQL segment B; a
     * dialogue turn's earlier utterances follow the question as PICARD
     * writes them (nothing outside --turns) */
    {"pair", "{question}{history:picard}", "{sql}"},
    /* one sequence: what a router or intent classifier sees at inference */
    {"question", "{question}{history:picard}", NULL},
    /* PICARD (seq2seq/utils/spider.py, cosql.py): question.strip() + " " +
     * serialized_schema.strip() [+ " || " + earlier utterances, most recent
     * first, " | "]; target f"{db_id} | {query}" */
    {"picard", "{question} {schema:picard}{history:picard}", "{db_id} | {sql}"},
    /* CREATE TABLEs, then the instruction and the question as SQL comments
     * (the "CreateTable" prompt of Rajkumar et al. 2022, used by DIN-SQL and
     * DAIL-SQL), a dialogue's earlier questions as comment lines before the
     * question's (nothing outside --turns); no partial SQL in the prompt */
    {"ddl",
     "{schema:ddl}\n\n-- Using valid SQLite, answer the following question for the tables "
     "provided above.\n{history:ddl}-- {question}\n",
     "{sql}"},
};

const char *ps_template_preset_names(void) { return "pair, question, picard, ddl"; }

int ps_template_preset(const char *name, bool causal, ps_template **out, ps_error *err)
{
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++) {
        const preset *p = &PRESETS[i];
        if (strcmp(name, p->name) != 0)
            continue;
        size_t n = strlen(p->prompt);
        if (!causal || !p->completion || (n && p->prompt[n - 1] == '\n'))
            return ps_template_build(name, name, p->prompt, p->completion, false, out, err);
        /* a decoder reads prompt and completion as one text: without a
         * separator picard's "...singer_id" ran into "concert_singer | ..." */
        char *prompt = malloc(n + 2);
        if (!prompt)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        memcpy(prompt, p->prompt, n);
        memcpy(prompt + n, "\n", 2);
        int rc = ps_template_build(name, name, prompt, p->completion, false, out, err);
        free(prompt);
        return rc;
    }
    return 1;
}

static bool word_byte(unsigned char c)
{
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') || c >= 0x80;
}

static bool space_byte(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* PICARD:
 *   lower: re.sub(r"\b(?<!['\"])(\w+)(?!['\"])\b", lambda m: m.group(1).lower(), s)
 *   white_space_fix: " ".join(s.split())
 *   comma_fix: s.replace(" , ", ", ")
 * applied as comma_fix(white_space_fix(lower(query))). A word is a maximal
 * run of word bytes; it is lower-cased unless a quote touches it. Only
 * ASCII letters change case (non-ASCII bytes count as word bytes, as
 * Python's \w counts letters, and are kept). */
int ps_sql_normalize_picard(const char *sql, size_t n, ps_buf *out)
{
    ps_buf low;
    ps_buf_init(&low);
    if (ps_buf_append(&low, sql, n) || ps_buf_reserve(out, n + 1)) {
        ps_buf_free(&low);
        return PS_ENOMEM;
    }
    char *s = low.data;
    for (size_t i = 0; i < n;) {
        if (!word_byte((unsigned char)s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && word_byte((unsigned char)s[j]))
            j++;
        bool quoted = (i > 0 && (s[i - 1] == '\'' || s[i - 1] == '"')) ||
                      (j < n && (s[j] == '\'' || s[j] == '"'));
        for (size_t k = i; !quoted && k < j; k++)
            if (s[k] >= 'A' && s[k] <= 'Z')
                s[k] = (char)(s[k] - 'A' + 'a');
        i = j;
    }
    /* white_space_fix then comma_fix, in one pass over the words */
    bool first = true, prev_fixed = false;
    int rc = 0;
    for (size_t i = 0; !rc && i < n;) {
        while (i < n && space_byte(s[i]))
            i++;
        size_t j = i;
        while (j < n && !space_byte(s[j]))
            j++;
        if (j == i)
            break;
        bool comma = j - i == 1 && s[i] == ',';
        /* " , " → ", ": a lone comma word between two words loses its
         * leading space (a final lone comma keeps " ,": no space follows) */
        bool more = false;
        for (size_t k = j; k < n; k++)
            if (!space_byte(s[k])) {
                more = true;
                break;
            }
        /* Python's replace does not overlap: after a replaced " , " the
         * space it consumed cannot start the next match */
        bool fix = !first && comma && more && !prev_fixed;
        if (!first && !fix)
            rc = ps_buf_putc(out, ' ');
        prev_fixed = fix;
        if (!rc)
            rc = ps_buf_append(out, s + i, j - i);
        first = false;
        i = j;
    }
    ps_buf_free(&low);
    return rc;
}
