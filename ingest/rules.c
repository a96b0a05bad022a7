/*
 * User cleaning rules: an ordered list of PCRE2 patterns (UTF + UCP mode)
 * that replace text or drop records. Patterns are compiled once (JIT when
 * available); matching runs under match and depth limits so that a
 * catastrophic pattern rejects one record (rule_error) instead of hanging
 * the build.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "common/json_where.h"
#include "ingest/ingest.h"

#include <jansson.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MATCH_LIMIT 10000000u
#define DEPTH_LIMIT 100000u

typedef struct rule {
    char *name;
    int fields; /* PS_FIELD_* bits */
    ps_rule_kind kind;
    char *with; /* replacement (REPLACE) */
    size_t with_len;
    pcre2_code *code;
    ps_rule_stats stats;
} rule;

/* Compiled rules are read-only once loaded and shared by threads; each
 * thread matches with match data of its own (ps_rules_match_data_new). */
struct ps_rules {
    rule *v;
    size_t n, cap;
    pcre2_match_context *mctx; /* the limits; only read while matching */
};

/* Match data big enough for every rule's capture groups: a replacement
 * such as "$1 $2" reads the groups' offsets from it, and match data with
 * room for the whole match only makes pcre2_substitute fail with "requested
 * value is not available". Made from the rule with the most groups. */
void *ps_rules_match_data_new(const ps_rules *r)
{
    const pcre2_code *widest = NULL;
    uint32_t most = 0;
    for (size_t i = 0; r && i < r->n; i++) {
        uint32_t groups = 0;
        pcre2_pattern_info(r->v[i].code, PCRE2_INFO_CAPTURECOUNT, &groups);
        if (!widest || groups > most) {
            widest = r->v[i].code;
            most = groups;
        }
    }
    return widest ? pcre2_match_data_create_from_pattern(widest, NULL)
                  : pcre2_match_data_create(1, NULL);
}
void ps_rules_match_data_free(void *md) { pcre2_match_data_free(md); }

int ps_rules_create(ps_rules **out)
{
    *out = NULL;
    ps_rules *r = calloc(1, sizeof *r);
    if (!r)
        return PS_ENOMEM;
    r->mctx = pcre2_match_context_create(NULL);
    if (!r->mctx) {
        ps_rules_free(r);
        return PS_ENOMEM;
    }
    pcre2_set_match_limit(r->mctx, MATCH_LIMIT);
    pcre2_set_depth_limit(r->mctx, DEPTH_LIMIT);
    *out = r;
    return 0;
}

static void rule_free(rule *x)
{
    free(x->name);
    free(x->with);
    pcre2_code_free(x->code);
}

void ps_rules_free(ps_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        rule_free(&r->v[i]);
    free(r->v);
    pcre2_match_context_free(r->mctx);
    free(r);
}

size_t ps_rules_count(const ps_rules *r) { return r ? r->n : 0; }

int ps_rules_fields(const ps_rules *r)
{
    int f = 0;
    for (size_t i = 0; r && i < r->n; i++)
        f |= r->v[i].fields;
    return f;
}
const char *ps_rules_name(const ps_rules *r, size_t i) { return r->v[i].name; }
ps_rule_stats *ps_rules_stats(ps_rules *r, size_t i) { return &r->v[i].stats; }

static int parse_flags(const char *flags, uint32_t *opts)
{
    for (const char *f = flags; *f; f++) {
        switch (*f) {
        case 'i': *opts |= PCRE2_CASELESS; break;
        case 'm': *opts |= PCRE2_MULTILINE; break;
        case 's': *opts |= PCRE2_DOTALL; break;
        case 'x': *opts |= PCRE2_EXTENDED; break;
        default: return -1;
        }
    }
    return 0;
}

/* Parses and compiles one rule object into *x. */
static int parse_rule(ps_rules *r, json_t *obj, size_t idx, const char *origin, rule *x,
                      ps_error *err)
{
    memset(x, 0, sizeof *x);
    if (!json_is_object(obj))
        return ps_error_set(err, PS_ERULE, "%s: rule %zu is not a JSON object", origin, idx + 1);
    const char *name = json_string_value(json_object_get(obj, "name"));
    if (!name || !*name)
        return ps_error_set(err, PS_ERULE, "%s: rule %zu has no \"name\" string", origin,
                            idx + 1);
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].name, name) == 0)
            return ps_error_set(err, PS_ERULE, "%s: rule %zu: the name '%s' is used twice",
                                origin, idx + 1, name);
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val)
    {
        static const char *const known[] = {"name", "field", "replace", "with", "drop_if",
                                            "flags", "description"};
        bool ok = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            ok |= strcmp(key, known[k]) == 0;
        if (!ok)
            return ps_error_set(err, PS_ERULE, "%s: rule '%s': unknown key \"%s\"", origin,
                                name, key);
    }
    const char *field = json_string_value(json_object_get(obj, "field"));
    if (!field)
        return ps_error_set(err, PS_ERULE,
                            "%s: rule '%s': \"field\" must be \"question\", \"sql\" or \"both\"",
                            origin, name);
    if (strcmp(field, "question") == 0)
        x->fields = PS_FIELD_QUESTION;
    else if (strcmp(field, "sql") == 0)
        x->fields = PS_FIELD_SQL;
    else if (strcmp(field, "both") == 0)
        x->fields = PS_FIELD_QUESTION | PS_FIELD_SQL;
    else
        return ps_error_set(err, PS_ERULE,
                            "%s: rule '%s': field \"%s\" is not \"question\", \"sql\" or \"both\"",
                            origin, name, field);
    json_t *rep = json_object_get(obj, "replace"), *drop = json_object_get(obj, "drop_if");
    if ((rep != NULL) == (drop != NULL))
        return ps_error_set(err, PS_ERULE,
                            "%s: rule '%s': needs exactly one of \"replace\" and \"drop_if\"",
                            origin, name);
    json_t *pat = rep ? rep : drop;
    if (!json_is_string(pat))
        return ps_error_set(err, PS_ERULE, "%s: rule '%s': the pattern must be a string",
                            origin, name);
    x->kind = rep ? PS_RULE_REPLACE : PS_RULE_DROP_IF;
    if (rep) {
        json_t *with = json_object_get(obj, "with");
        if (!json_is_string(with))
            return ps_error_set(err, PS_ERULE,
                                "%s: rule '%s': a replace rule needs a \"with\" string", origin,
                                name);
        x->with_len = json_string_length(with);
        x->with = malloc(x->with_len + 1);
        if (!x->with)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        memcpy(x->with, json_string_value(with), x->with_len + 1);
    } else if (json_object_get(obj, "with")) {
        return ps_error_set(err, PS_ERULE, "%s: rule '%s': \"with\" is only for replace rules",
                            origin, name);
    }
    uint32_t copts = PCRE2_UTF | PCRE2_UCP;
    json_t *flags = json_object_get(obj, "flags");
    if (flags && (!json_is_string(flags) || parse_flags(json_string_value(flags), &copts)))
        return ps_error_set(err, PS_ERULE,
                            "%s: rule '%s': \"flags\" must be a string of i, m, s, x", origin,
                            name);
    int ec;
    PCRE2_SIZE eoff;
    x->code = pcre2_compile((PCRE2_SPTR)json_string_value(pat), json_string_length(pat), copts,
                            &ec, &eoff, NULL);
    if (!x->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return ps_error_set(err, PS_ERULE, "%s: rule '%s': bad pattern at offset %zu: %s",
                            origin, name, (size_t)eoff, (const char *)msg);
    }
    pcre2_jit_compile(x->code, PCRE2_JIT_COMPLETE); /* optional speed-up */
    x->name = strdup(name);
    if (!x->name)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

int ps_rules_add_json(ps_rules *r, const char *text, size_t len, const char *origin,
                      ps_error *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ps_json_load_error(err, origin, &jerr);
    json_t *list = json_is_object(root) ? json_object_get(root, "rules") : root;
    if (!json_is_array(list)) {
        json_decref(root);
        return ps_error_set(err, PS_ERULE,
                            "%s: expected an array of rules (or {\"rules\": [...]})", origin);
    }
    size_t n = json_array_size(list), base = r->n;
    if (r->cap < base + n) {
        rule *nv = realloc(r->v, (base + n) * sizeof *nv);
        if (!nv) {
            json_decref(root);
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        }
        r->v = nv;
        r->cap = base + n;
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        rc = parse_rule(r, json_array_get(list, i), i, origin, &r->v[r->n], err);
        if (rc) {
            rule_free(&r->v[r->n]);
            break;
        }
        r->n++;
    }
    if (rc) { /* all or nothing */
        while (r->n > base)
            rule_free(&r->v[--r->n]);
    }
    json_decref(root);
    return rc;
}

/* PCRE2's message for `code`, truncated to fit `out`. */
static void pcre_msg(int code, char *out, size_t n)
{
    if (pcre2_get_error_message(code, (PCRE2_UCHAR *)out, n) < 0 && n > 0)
        out[n - 1] = '\0';
}

/* Marks the outcome as a per-record failure of rule i (e.g. match limit). */
static void fail(ps_rules_outcome *outcome, size_t i, const char *name, int code)
{
    char msg[100];
    pcre_msg(code, msg, sizeof msg);
    outcome->failed = true;
    outcome->rule = i;
    snprintf(outcome->detail, sizeof outcome->detail, "rule '%s' failed: %s", name, msg);
}

int ps_rules_apply(const ps_rules *r, void *match_data, int field, ps_buf *text,
                   ps_buf *scratch, unsigned char *touched, ps_rules_outcome *outcome,
                   ps_error *err)
{
    pcre2_match_data *md = match_data;
    memset(outcome, 0, sizeof *outcome);
    for (size_t i = 0; r && i < r->n; i++) {
        const rule *x = &r->v[i];
        if (!(x->fields & field))
            continue;
        const char *subject = text->data ? text->data : "";
        if (x->kind == PS_RULE_DROP_IF) {
            int m = pcre2_match(x->code, (PCRE2_SPTR)subject, text->len, 0, PCRE2_NO_UTF_CHECK,
                                md, r->mctx);
            if (m >= 0 || m == PCRE2_ERROR_PARTIAL) {
                touched[i] |= 1;
                outcome->dropped = true;
                outcome->rule = i;
                snprintf(outcome->detail, sizeof outcome->detail,
                         "the %s matched drop_if rule '%s'",
                         field == PS_FIELD_SQL ? "sql" : "question", x->name);
                return 0;
            }
            if (m != PCRE2_ERROR_NOMATCH) {
                fail(outcome, i, x->name, m);
                return 0;
            }
            continue;
        }
        /* REPLACE: first into scratch with a guess, again if it overflows. */
        PCRE2_SIZE cap = text->len + text->len / 2 + x->with_len + 64;
        for (int attempt = 0; attempt < 2; attempt++) {
            ps_buf_reset(scratch);
            if (ps_buf_reserve(scratch, cap))
                return ps_error_set(err, PS_ENOMEM, "out of memory applying rule '%s'",
                                    x->name);
            PCRE2_SIZE outlen = cap + 1;
            int m = pcre2_substitute(
                x->code, (PCRE2_SPTR)subject, text->len, 0,
                PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH | PCRE2_NO_UTF_CHECK,
                md, r->mctx, (PCRE2_SPTR)x->with, x->with_len, (PCRE2_UCHAR *)scratch->data,
                &outlen);
            if (m == PCRE2_ERROR_NOMEMORY && attempt == 0) {
                cap = outlen;
                continue;
            }
            if (m < 0) {
                if (m == PCRE2_ERROR_MATCHLIMIT || m == PCRE2_ERROR_DEPTHLIMIT ||
                    m == PCRE2_ERROR_HEAPLIMIT) {
                    fail(outcome, i, x->name, m);
                    return 0;
                }
                char msg[100];
                pcre_msg(m, msg, sizeof msg);
                return ps_error_set(err, PS_ERULE, "rule '%s': replacement failed: %s",
                                    x->name, msg);
            }
            if (m > 0) {
                touched[i] |= 1;
                scratch->len = outlen;
                scratch->data[outlen] = '\0';
                if (outlen != text->len || memcmp(scratch->data, subject, outlen) != 0) {
                    touched[i] |= 2;
                    ps_buf tmp = *text;
                    *text = *scratch;
                    *scratch = tmp;
                }
            }
            break;
        }
    }
    return 0;
}
