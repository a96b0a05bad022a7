/* The host's utf8proc and PCRE2 Unicode versions against those the
 * generated tables assume (unicode_check.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenize/unicode_check.h"

#include "tokenize/added_internal.h"
#include "tokenize/hf.h"
#include "tokenize/unicode.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <utf8proc.h>

const char *ps_uni_host_utf8proc(void) { return utf8proc_unicode_version(); }

static char pcre2_unicode[32];
static pthread_once_t pcre2_once = PTHREAD_ONCE_INIT;

static void read_pcre2(void)
{
    /* PCRE2 wants at least 24 code units for this string */
    if (pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, pcre2_unicode) < 0)
        snprintf(pcre2_unicode, sizeof pcre2_unicode, "unknown");
}

const char *ps_uni_host_pcre2(void)
{
    pthread_once(&pcre2_once, read_pcre2);
    return pcre2_unicode;
}

void ps_uni_deps_names(unsigned deps, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", deps & PS_UNIDEP_UTF8PROC ? "utf8proc" : "",
             deps == (PS_UNIDEP_UTF8PROC | PS_UNIDEP_PCRE2) ? ", " : "",
             deps & PS_UNIDEP_PCRE2 ? "PCRE2" : "");
}

bool ps_uni_versions_match(unsigned deps, const char *want_utf8proc, const char *want_pcre2,
                           const char *have_utf8proc, const char *have_pcre2,
                           ps_uni_mismatch *mm)
{
    const struct { unsigned dep; const char *lib, *want, *have; } v[] = {
        {PS_UNIDEP_UTF8PROC, "utf8proc", want_utf8proc, have_utf8proc},
        {PS_UNIDEP_PCRE2, "PCRE2", want_pcre2, have_pcre2},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        if (!(deps & v[i].dep) || (v[i].want && v[i].have && !strcmp(v[i].want, v[i].have)))
            continue;
        mm->lib = v[i].lib;
        mm->have = v[i].have ? v[i].have : "unknown";
        mm->want = v[i].want ? v[i].want : "unknown";
        return false;
    }
    return true;
}

/* Whether an added token is matched as a single word: that test reads
 * utf8proc's categories (added.c). */
static bool single_words(const ps_tok_added *a)
{
    for (size_t i = 0; a && i < a->n; i++)
        if (a->toks[i].f.single_word)
            return true;
    return false;
}

static unsigned deps_of(const ps_tokenizer *tok, unsigned regexes)
{
    const struct ps_tok_hf *hf = tok->hf;
    unsigned d = regexes ? PS_UNIDEP_PCRE2 : 0;
    /* the fused BERT pipeline always reads categories (punctuation) */
    if (!hf || hf->norm || hf->pretok || single_words(hf->added))
        d |= PS_UNIDEP_UTF8PROC;
    return d;
}

int ps_tok_unicode_check(ps_tokenizer *tok, const char *name, unsigned regexes,
                         bool any_host, ps_error *err)
{
    tok->unicode_deps = deps_of(tok, regexes);
    ps_uni_mismatch mm;
    if (any_host || ps_uni_versions_match(tok->unicode_deps, ps_uni_tables_ucd_version,
                                          ps_uni_tables_pcre2_version, ps_uni_host_utf8proc(),
                                          ps_uni_host_pcre2(), &mm))
        return PS_OK;
    return ps_error_set(err, PS_EVERSION,
                        "%s: this host's %s has Unicode %s, but pairshard's Unicode tables are "
                        "made for %s's Unicode %s, and this tokenizer's ids depend on it: they "
                        "could differ from HuggingFace's (docs/TOKENIZER.md, \"Unicode "
                        "versions\")", name, mm.lib, mm.have, mm.lib, mm.want);
}
