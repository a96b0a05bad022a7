/* Signs of a damaged vocab.txt, found at load and kept as warnings (the
 * library does not print; the CLI shows them). The tokens still load as
 * HuggingFace loads them: these are what a person should look at. */
#include "tokenize/tokenize.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Individual duplicate lines reported before a count stands for the rest. */
#define MAX_DUP_WARNINGS 5

int ps_tok_warn(ps_tokenizer *tok, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char **w = realloc(tok->warnings, (tok->n_warnings + 1) * sizeof *w);
    if (!w)
        return PS_ENOMEM;
    tok->warnings = w;
    if (!(w[tok->n_warnings] = strdup(msg)))
        return PS_ENOMEM;
    tok->n_warnings++;
    return PS_OK;
}

/* HTML escapes a scraped or re-exported vocabulary may carry in place of
 * the character itself. */
static const struct {
    const char *escaped, *plain;
} HTML[] = {{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}, {"&quot;", "\""}};

static int check_html(ps_tokenizer *tok, const char *name)
{
    for (size_t i = 0; i < sizeof HTML / sizeof *HTML; i++) {
        int32_t esc = ps_tok_vocab_find(&tok->vocab, HTML[i].escaped, strlen(HTML[i].escaped));
        int32_t plain = ps_tok_vocab_find(&tok->vocab, HTML[i].plain, strlen(HTML[i].plain));
        if (esc >= 0 && plain < 0 &&
            ps_tok_warn(tok, "%s:%d: '%s' is HTML-escaped and '%s' is missing: text with '%s' "
                        "becomes [UNK] (a damaged copy of the vocabulary?)",
                        name, esc + 1, HTML[i].escaped, HTML[i].plain, HTML[i].plain))
            return PS_ENOMEM;
    }
    return PS_OK;
}

/* One pass over the lines: CRLF endings and duplicated tokens. */
static int check_lines(ps_tokenizer *tok, const char *data, size_t len, const char *name)
{
    size_t line_no = 0, crlf = 0, first_crlf = 0, dups = 0;
    ps_tok_lines it = {data, len, 0, 0};
    const char *line;
    size_t line_len;
    while (ps_tok_next_line(&it, &line, &line_len)) {
        line_no = it.line_no;
        if (line_len && line[line_len - 1] == '\r' && !crlf++)
            first_crlf = line_no;
        size_t tok_len = ps_tok_trim_end_len(line, line_len);
        int32_t id = ps_tok_vocab_find(&tok->vocab, line, tok_len);
        if (id < 0 || (size_t)id == line_no - 1)
            continue;
        if (++dups <= MAX_DUP_WARNINGS &&
            ps_tok_warn(tok, "%s:%zu: '%.*s' appears again at line %d, whose id %d it gets "
                        "(as in HuggingFace); id %zu is never produced",
                        name, line_no, (int)(tok_len > 60 ? 60 : tok_len), line, id + 1, id,
                        line_no - 1))
            return PS_ENOMEM;
    }
    if (dups > MAX_DUP_WARNINGS &&
        ps_tok_warn(tok, "%s: %zu duplicated tokens in all (%d shown)", name, dups,
                    MAX_DUP_WARNINGS))
        return PS_ENOMEM;
    if (crlf && ps_tok_warn(tok, "%s:%zu: %zu of %zu lines end in CRLF (Windows line endings); "
                            "the CR is trimmed as HuggingFace trims it",
                            name, first_crlf, crlf, line_no))
        return PS_ENOMEM;
    return PS_OK;
}

int ps_tok_vocab_check(ps_tokenizer *tok, const char *data, size_t len, const char *name)
{
    if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3)) {
        /* the first line's length: the buffer is not NUL-terminated */
        size_t first = 0;
        while (3 + first < len && data[3 + first] != '\r' && data[3 + first] != '\n')
            first++;
        if (ps_tok_warn(tok, "%s:1: the file starts with a UTF-8 byte-order mark, which stays "
                        "part of the first token '%.*s' (as in HuggingFace): that token is "
                        "never matched",
                        name, (int)(first > 60 ? 60 : first), data + 3))
            return PS_ENOMEM;
    }
    int rc = check_lines(tok, data, len, name);
    return rc ? rc : check_html(tok, name);
}

size_t ps_tokenizer_warning_count(const ps_tokenizer *tok) { return tok ? tok->n_warnings : 0; }

const char *ps_tokenizer_warning(const ps_tokenizer *tok, size_t i)
{
    return tok && i < tok->n_warnings ? tok->warnings[i] : NULL;
}
