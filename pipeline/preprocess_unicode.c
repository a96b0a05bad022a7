/*
 * Whether this host may serve a set's ids: token ids depend on the Unicode
 * data of utf8proc and PCRE2 where the tokenizer reads them, and the
 * generated tables (tokenize/unicode_tables.c) correct those of one
 * version each. The set records the versions its build ran with (manifest
 * "unicode"); a host whose libraries differ there can tokenize the same
 * question into other ids than the model was trained on, so the open is
 * refused unless the caller allows it (then it is a warning).
 */
#include "common/options.h"
#include "pipeline/preprocess_priv.h"
#include "tokenize/unicode.h"
#include "tokenize/unicode_check.h"

#include <stdio.h>
#include <string.h>

/* The sizes ps_preprocess_options has had (common/options.h), oldest first. */
static const size_t OPTIONS_SIZES[] = {sizeof(ps_preprocess_options)};
#define N_OPTIONS_SIZES (sizeof OPTIONS_SIZES / sizeof *OPTIONS_SIZES)

static void defaults(ps_preprocess_options *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
}

int ps_preprocess_options_init_size(ps_preprocess_options *o, size_t struct_size)
{
    ps_preprocess_options d;
    defaults(&d);
    return ps_options_init_copy(o, struct_size, &d, OPTIONS_SIZES, N_OPTIONS_SIZES,
                                "ps_preprocess_options");
}

int ps_pp_options_adopt(ps_preprocess_options *o, const ps_preprocess_options *opt,
                        ps_error *err)
{
    defaults(o);
    return ps_options_adopt(o, sizeof *o, opt, OPTIONS_SIZES, N_OPTIONS_SIZES,
                            "ps_preprocess_options", err);
}

const char *ps_preprocessor_get_warning(const ps_preprocessor *p)
{
    return p && p->warning[0] ? p->warning : NULL;
}

/* A set built before manifests had "unicode": utf8proc's version from
 * "libraries" ("2.8.0 (Unicode 15.0.0)"); PCRE2's Unicode was not
 * recorded, but the same PCRE2 release has the same one. */
static void older_set(json_t *m, char *utf8proc, size_t n, const char **pcre2)
{
    json_t *libs = json_object_get(m, "libraries");
    const char *u = json_string_value(json_object_get(libs, "utf8proc"));
    const char *s = u ? strstr(u, "(Unicode ") : NULL;
    if (s && sscanf(s, "(Unicode %31[0-9.])", utf8proc) == 1 && strlen(utf8proc) < n)
        ;
    else
        utf8proc[0] = '\0';
    char host[256], *save = NULL;
    ps_dependency_versions(host, sizeof host);
    const char *rec = json_string_value(json_object_get(libs, "pcre2"));
    *pcre2 = NULL;
    for (char *line = strtok_r(host, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (!strncmp(line, "pcre2 ", 6) && rec && !strcmp(line + 6, rec))
            *pcre2 = ps_uni_host_pcre2();
}

int ps_pp_unicode_check(ps_preprocessor *p, json_t *m, bool allow, ps_error *err)
{
    unsigned deps = p->tok->unicode_deps;
    json_t *u = json_object_get(m, "unicode");
    char old_utf8proc[32];
    const char *set_utf8proc, *set_pcre2, *tab_ucd = NULL, *tab_pcre2 = NULL;
    if (json_is_object(u)) {
        set_utf8proc = json_string_value(json_object_get(u, "utf8proc"));
        set_pcre2 = json_string_value(json_object_get(u, "pcre2"));
        json_t *t = json_object_get(u, "tables");
        tab_ucd = json_string_value(json_object_get(t, "ucd"));
        tab_pcre2 = json_string_value(json_object_get(t, "pcre2"));
    } else {
        older_set(m, old_utf8proc, sizeof old_utf8proc, &set_pcre2);
        set_utf8proc = old_utf8proc[0] ? old_utf8proc : NULL;
    }
    char uses[32], msg[640];
    ps_uni_deps_names(deps, uses, sizeof uses);
    const char *host_u = ps_uni_host_utf8proc(), *host_p = ps_uni_host_pcre2();
    ps_uni_mismatch mm;
    if (!ps_uni_versions_match(deps, set_utf8proc, set_pcre2, host_u, host_p, &mm))
        snprintf(msg, sizeof msg, "%s/manifest.json: the set was built with %s's Unicode %s; "
                 "this host's %s has Unicode %s", p->dir, mm.lib, mm.want, mm.lib, mm.have);
    else if (json_is_object(u) &&
             !ps_uni_versions_match(deps, tab_ucd, tab_pcre2, ps_uni_tables_ucd_version,
                                    ps_uni_tables_pcre2_version, &mm))
        snprintf(msg, sizeof msg, "%s/manifest.json: the set was built with Unicode tables for "
                 "%s's Unicode %s; this library's are for %s", p->dir, mm.lib, mm.want,
                 mm.have);
    else if (!ps_uni_versions_match(deps, ps_uni_tables_ucd_version, ps_uni_tables_pcre2_version,
                                    host_u, host_p, &mm))
        snprintf(msg, sizeof msg, "%s: this host's %s has Unicode %s; pairshard's Unicode tables "
                 "are made for %s", p->dir, mm.lib, mm.have, mm.want);
    else
        return 0;
    if (allow) {
        snprintf(p->warning, sizeof p->warning, "%s; its tokenizer's ids depend on %s, so ids "
                 "served here may differ from the stored ones (served anyway: "
                 "allow_unicode_mismatch)", msg, uses);
        return 0;
    }
    return ps_error_set(err, PS_EVERSION, "%s; its tokenizer's ids depend on %s, so ids served "
                        "here could differ from the stored ones: rebuild the set on this host, "
                        "or open it with allow_unicode_mismatch to serve it anyway", msg, uses);
}
