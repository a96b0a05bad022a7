/*
 * ps_preprocessor_open: a set's preprocessing rebuilt from the set alone.
 * The cleaning options come from the manifest's "config" (what the build
 * recorded as its effective configuration); the rules, template, tokenizer
 * and schemas from the files embedded in DIR/preprocess/, each checked
 * against the SHA-256 the manifest lists — and also against what the build
 * recorded elsewhere of the ones it used (the tokenizer file's and rules
 * file's SHA-256, the template's and schemas' digests), so that a file
 * edited together with its listed hash, or one that hashes right but loads
 * differently, is refused too.
 */
#include "pipeline/preprocess_priv.h"
#include "tokenize/tokenize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MANIFEST_MAX ((size_t)256 << 20)
#define EMBED_MAX ((size_t)1 << 30)

/* Reads an embedded file listed under `key` and checks its hash, and
 * against `recorded` too when given: the SHA-256 the build recorded of the
 * file it read elsewhere in the manifest (tokenizer.vocab_sha256,
 * config.clean.rules_sha256), so that a file edited together with its
 * preprocess hash is still refused. *data NULL (and 0) when the manifest
 * lists none. */
static int embedded(const char *dir, json_t *files, const char *key, const char *recorded,
                    char **data, size_t *len, char *path, size_t psz, ps_error *err)
{
    *data = NULL;
    json_t *f = json_object_get(files, key);
    if (!f)
        return 0;
    const char *rel = json_string_value(json_object_get(f, "file"));
    const char *want = json_string_value(json_object_get(f, "sha256"));
    if (!rel || !want || strstr(rel, ".."))
        return ps_error_set(err, PS_EFORMAT, "%s/manifest.json: preprocess.files.%s is malformed",
                            dir, key);
    snprintf(path, psz, "%s/%s", dir, rel);
    int rc = ps_file_read_all(path, "embedded file", EMBED_MAX, data, len, err);
    if (rc && !err)
        return PS_ECORRUPT;
    if (rc) {
        char why[sizeof err->message];
        memcpy(why, err->message, sizeof why);
        return ps_error_set(err, PS_ECORRUPT, "%s: the set's embedded %s cannot be read: %s",
                            path, key, why);
    }
    char sha[65];
    ps_sha256_hex(*data, *len, sha);
    if (strcmp(sha, want) != 0) {
        free(*data);
        *data = NULL;
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: SHA-256 %s, but the manifest lists %s: the embedded %s was "
                            "changed after the build; refusing to serve it",
                            path, sha, want, key);
    }
    if (recorded && *recorded && strcmp(sha, recorded) != 0) {
        free(*data);
        *data = NULL;
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: SHA-256 %s is not the build's %s (%s); refusing to serve it",
                            path, sha, key, recorded);
    }
    return 0;
}

static const char *str_at(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* A copy of `s` kept in p->strings' chain (freed with the preprocessor). */
static const char *keep(ps_preprocessor *p, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *c = malloc(sizeof(char *) + n + 1);
    if (!c)
        return NULL;
    memcpy(c, &p->strings, sizeof(char *));
    memcpy(c + sizeof(char *), s, n + 1);
    p->strings = c;
    return c + sizeof(char *);
}

/* The first candidate of a field list ("a,b" → "a"), or `dflt`. */
static char *first_name(const char *list, const char *dflt)
{
    const char *s = list ? list : dflt;
    size_t n = strcspn(s, ",");
    char *c = malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

/* The cleaning options the build recorded (cli/cmd_build.c,
 * effective_config). */
static int clean_options(ps_preprocessor *p, json_t *config, ps_error *err)
{
    ps_clean_options *o = &p->cfg.clean;
    ps_clean_options_init(o);
    json_t *c = json_object_get(config, "clean");
    json_t *t = json_object_get(config, "text_to_sql");
    if (!json_is_object(c))
        return ps_error_set(err, PS_EFORMAT, "%s/manifest.json: no config.clean", p->dir);
    const char *sqlf = str_at(c, "sql_field");
    o->question_field = keep(p, str_at(c, "question_field"));
    o->sql_field = sqlf && strcmp(sqlf, "sql|query") != 0 ? keep(p, sqlf) : NULL;
    o->label_field = keep(p, str_at(c, "label_field"));
    o->id_field = keep(p, str_at(c, "id_field"));
    const char *s;
    if ((s = str_at(c, "utf8")) && ps_utf8_policy_parse(s, &o->utf8_policy))
        return ps_error_set(err, PS_EFORMAT, "%s/manifest.json: config.clean.utf8 \"%s\"", p->dir, s);
    if ((s = str_at(c, "normalize")) && ps_normalization_parse(s, &o->question_normalization))
        return ps_error_set(err, PS_EFORMAT, "%s/manifest.json: config.clean.normalize \"%s\"",
                            p->dir, s);
    if ((s = str_at(c, "sql_normalize")) && ps_normalization_parse(s, &o->sql_normalization))
        return ps_error_set(err, PS_EFORMAT, "%s/manifest.json: config.clean.sql_normalize \"%s\"",
                            p->dir, s);
    o->strip_joiners = json_is_true(json_object_get(c, "strip_joiners"));
    o->sql_backslash_escapes = json_is_true(json_object_get(c, "sql_backslash_escapes"));
    json_int_t v;
    if ((v = json_integer_value(json_object_get(c, "max_record_bytes"))) > 0)
        o->max_record_bytes = (size_t)v;
    if ((v = json_integer_value(json_object_get(c, "max_field_bytes"))) > 0)
        o->max_field_bytes = (size_t)v;
    if (json_is_object(t)) {
        o->turns_path = keep(p, str_at(t, "turns"));
        o->turn_question_field = keep(p, str_at(t, "turn_question_field"));
        o->turn_sql_field = keep(p, str_at(t, "turn_sql_field"));
        o->db_field = keep(p, str_at(t, "db_field"));
        o->reject_invalid_sql = json_is_true(json_object_get(t, "reject_invalid_sql"));
    }
    p->question_key = first_name(o->question_field, "question");
    p->sql_key = first_name(o->sql_field, "sql");
    p->db_key = first_name(o->db_field, "db_id");
    if (!p->question_key || !p->sql_key || !p->db_key)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    if (o->turns_path &&
        (!(p->turns_path = strdup(o->turns_path)) ||
         !(p->turn_q_key = first_name(o->turn_question_field, "utterance")) ||
         !(p->turn_sql_key = first_name(o->turn_sql_field, "query"))))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

/* The tokenizer from its embedded file, with the build's options. */
static int load_tokenizer(ps_preprocessor *p, json_t *m, json_t *files, ps_error *err)
{
    json_t *config = json_object_get(m, "config");
    char path[4096], *data;
    size_t len;
    int rc = embedded(p->dir, files, "tokenizer",
                      str_at(json_object_get(m, "tokenizer"), "vocab_sha256"), &data, &len, path,
                      sizeof path, err);
    if (rc)
        return rc;
    if (!data)
        return ps_error_set(err, PS_ECORRUPT, "%s/manifest.json: no embedded tokenizer", p->dir);
    json_t *tc = json_object_get(config, "tokenizer");
    const char *kind = str_at(tc, "kind");
    /* any host: ps_pp_unicode_check compares the versions, with the set's */
    if (kind && strcmp(kind, "tokenizer.json") == 0) {
        rc = ps_tok_load_json_host(path, true, &p->tok, err);
    } else {
        ps_tokenizer_options to;
        ps_tokenizer_options_init(&to);
        const char *lc = str_at(tc, "lowercase");
        if (lc && strcmp(lc, "default") != 0)
            to.lowercase = strcmp(lc, "yes") == 0;
        rc = ps_tok_load_vocab_host(data, len, path, &to, true, &p->tok, err);
    }
    free(data);
    if (rc)
        return rc;
    json_int_t ml = json_integer_value(json_object_get(tc, "max_length"));
    p->cfg.max_length = ml > 0 ? (size_t)ml : 0;
    /* a causal or seq2seq set serves its own layout: a question alone is
     * the prefix and prompt (causal) or the encoded source (seq2seq) */
    const char *layout = str_at(config, "layout");
    int lay = layout ? ps_layout_parse(layout) : PS_LAYOUT_PAIR;
    if (lay < 0)
        return ps_error_set(err, PS_EFORMAT, "%s/manifest.json: config: unknown layout \"%s\"",
                            p->dir, layout);
    p->cfg.layout = lay;
    /* a record served with its SQL ends as the set's did: sets built before
     * causal completions ended in EOS have no "append_eos" */
    p->cfg.no_append_eos = !json_is_true(json_object_get(config, "append_eos"));
    json_int_t mt = json_integer_value(json_object_get(tc, "max_target_length"));
    p->cfg.max_target_length = mt > 0 && lay == PS_LAYOUT_SEQ2SEQ ? (size_t)mt : 0;
    p->cfg.tokenizer = p->tok;
    ps_tokenizer_info ti;
    ps_tokenizer_get_info(p->tok, &ti);
    p->pad_id = ti.pad_id;
    return 0;
}

/* The template and schemas, checked against the digests the build
 * recorded of the ones it used. */
static int load_t2s(ps_preprocessor *p, json_t *m, json_t *files, ps_error *err)
{
    json_t *t2s = json_object_get(m, "text_to_sql");
    json_t *sel = json_object_get(t2s, "schema_selection");
    json_int_t budget = json_integer_value(json_object_get(sel, "max_prompt_length"));
    p->cfg.max_prompt_length = budget > 0 ? (size_t)budget : 0;
    p->cfg.reject_lost_schema = json_is_true(json_object_get(sel, "reject_lost_schema"));
    char path[4096], *data;
    size_t len;
    int rc = embedded(p->dir, files, "schemas", NULL, &data, &len, path, sizeof path, err);
    if (!rc && data) {
        free(data);
        if (!(rc = ps_schemas_create(&p->schemas, err)))
            rc = ps_schemas_load_tables(p->schemas, path, err);
        char dg[65];
        const char *want = str_at(json_object_get(t2s, "schemas"), "digest");
        if (!rc && (ps_schemas_get_digest(p->schemas, dg), !want || strcmp(dg, want)))
            rc = ps_error_set(err, PS_ECORRUPT, "%s: its schemas' digest %s is not the build's "
                              "(%s)", path, dg, want ? want : "none recorded");
    }
    if (rc || (rc = embedded(p->dir, files, "template", NULL, &data, &len, path, sizeof path,
                             err)))
        return rc;
    if (!data)
        return 0;
    json_t *j = json_loadb(data, len, 0, NULL);
    const char *preset = j ? str_at(j, "preset") : NULL;
    rc = preset ? ps_template_open_layout(preset, p->cfg.layout, &p->tmpl, err)
                : ps_template_parse(data, len, path, &p->tmpl, err);
    json_decref(j);
    free(data);
    if (rc)
        return rc;
    ps_template_info ti;
    ps_template_get_info(p->tmpl, &ti);
    const char *want = str_at(json_object_get(t2s, "template"), "sha256");
    if (!want || strcmp(ti.sha256, want) != 0)
        return ps_error_set(err, PS_ECORRUPT, "%s: the template's digest %s is not the build's "
                            "(%s)", path, ti.sha256, want ? want : "none recorded");
    return 0;
}

/* The cleaner with the set's rules, schemas and template. */
static int make_cleaner(ps_preprocessor *p, json_t *config, json_t *files, ps_error *err)
{
    int rc = ps_cleaner_create(&p->cfg.clean, &p->cleaner, err);
    if (!rc && p->schemas)
        rc = ps_cleaner_set_schemas(p->cleaner, p->schemas, err);
    if (!rc && p->tmpl)
        rc = ps_cleaner_set_template(p->cleaner, p->tmpl, err);
    char path[4096], *data = NULL;
    size_t len;
    if (!rc)
        rc = embedded(p->dir, files, "rules",
                      str_at(json_object_get(config, "clean"), "rules_sha256"), &data, &len, path,
                      sizeof path, err);
    if (!rc && data)
        rc = ps_cleaner_add_rules(p->cleaner, data, len, path, err);
    free(data);
    if (rc)
        return rc;
    p->cfg.tmpl = p->tmpl;
    p->cfg.schemas = p->schemas;
    p->in.path = p->in.base = "<serve>";
    p->in.fmt = PS_FORMAT_JSONL;
    return 0;
}

static int open_manifest(ps_preprocessor *p, json_t *m, bool allow_unicode, ps_error *err)
{
    json_t *pre = json_object_get(m, "preprocess");
    if (!json_is_object(pre))
        return ps_error_set(err, PS_EVERSION,
                            "%s: the set was built before sets embedded their preprocessing (its "
                            "manifest has no \"preprocess\"); rebuild it with pairshard %s to "
                            "serve it", p->dir, ps_version_string());
    if (json_integer_value(json_object_get(pre, "version")) != PS_PREPROCESS_VERSION)
        return ps_error_set(err, PS_EVERSION, "%s: preprocess version %lld is not %d", p->dir,
                            (long long)json_integer_value(json_object_get(pre, "version")),
                            PS_PREPROCESS_VERSION);
    json_t *files = json_object_get(pre, "files");
    json_t *config = json_object_get(m, "config");
    int rc = clean_options(p, config, err);
    if (!rc)
        rc = load_tokenizer(p, m, files, err);
    if (!rc)
        rc = ps_pp_unicode_check(p, m, allow_unicode, err);
    if (!rc)
        rc = load_t2s(p, m, files, err);
    if (!rc)
        rc = make_cleaner(p, config, files, err);
    if (!rc)
        rc = ps_pp_pool_init(p, err);
    return rc;
}

/* Source `name`'s view of a mixture's manifest `m`: its cleaning and
 * text-to-SQL options, template and schemas where a single-source set has
 * its own, so that the rest reads it as any set. A new reference, or NULL
 * with err set. */
static json_t *source_view(const char *dir, json_t *m, const char *name, ps_error *err)
{
    json_t *srcs = json_object_get(m, "sources");
    json_t *config = json_object_get(m, "config");
    json_t *csrcs = json_object_get(config, "sources");
    size_t n = json_array_size(srcs), k;
    if (!name) {
        if (!n)
            return json_incref(m);
        ps_buf names;
        ps_buf_init(&names);
        for (k = 0; k < n; k++)
            ps_buf_printf(&names, "%s%s", k ? ", " : "",
                          str_at(json_array_get(srcs, k), "name"));
        ps_error_set(err, PS_EUSAGE, "%s: the set has several sources (%s): name the one to "
                     "serve", dir, names.data ? names.data : "");
        ps_buf_free(&names);
        return NULL;
    }
    for (k = 0; k < n && strcmp(str_at(json_array_get(srcs, k), "name"), name) != 0; k++)
        ;
    if (k == n || k >= json_array_size(csrcs)) {
        ps_error_set(err, PS_EUSAGE, "%s: the set has no source '%s'", dir, name);
        return NULL;
    }
    json_t *v = json_deep_copy(m), *vc = json_object_get(v, "config");
    if (!v) {
        ps_error_set(err, PS_ENOMEM, "out of memory");
        return NULL;
    }
    json_t *cs = json_array_get(csrcs, k), *s = json_array_get(srcs, k);
    json_t *files = json_object_get(json_object_get(v, "preprocess"), "files");
    json_object_set(vc, "clean", json_object_get(cs, "clean"));
    json_object_del(vc, "text_to_sql");
    json_object_del(v, "text_to_sql");
    if (json_object_get(cs, "text_to_sql"))
        json_object_set(vc, "text_to_sql", json_object_get(cs, "text_to_sql"));
    if (json_object_get(s, "text_to_sql"))
        json_object_set(v, "text_to_sql", json_object_get(s, "text_to_sql"));
    const char *what[2] = {"template", "schemas"};
    for (int i = 0; files && i < 2; i++) {
        char key[200];
        snprintf(key, sizeof key, "source.%s.%s", name, what[i]);
        json_object_del(files, what[i]);
        if (json_object_get(files, key))
            json_object_set(files, what[i], json_object_get(files, key));
    }
    return v;
}

int ps_preprocessor_open(const char *dir, ps_preprocessor **out, ps_error *err)
{
    return ps_preprocessor_open_opts(dir, NULL, out, err);
}

int ps_preprocessor_open_source(const char *dir, const char *source, ps_preprocessor **out,
                                ps_error *err)
{
    ps_preprocess_options o;
    ps_preprocess_options_init(&o);
    o.source = source;
    return ps_preprocessor_open_opts(dir, &o, out, err);
}

int ps_preprocessor_open_opts(const char *dir, const ps_preprocess_options *opt,
                              ps_preprocessor **out, ps_error *err)
{
    *out = NULL;
    ps_preprocess_options o;
    int rc = ps_pp_options_adopt(&o, opt, err);
    if (rc)
        return rc;
    ps_preprocessor *p = calloc(1, sizeof *p);
    if (!p || !(p->dir = strdup(dir))) {
        free(p);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    rc = ps_file_read_all(path, "manifest", MANIFEST_MAX, &text, &len, err);
    if (rc) {
        ps_preprocessor_free(p);
        return rc;
    }
    json_error_t je;
    json_t *m = json_loadb(text, len, 0, &je);
    free(text);
    json_t *v = m ? source_view(dir, m, o.source, err) : NULL;
    rc = !m  ? ps_error_set(err, PS_EFORMAT, "%s: not JSON (line %d: %s)", path, je.line, je.text)
         : v ? open_manifest(p, v, o.allow_unicode_mismatch != 0, err)
             : err ? err->code : PS_EUSAGE;
    json_decref(v);
    json_decref(m);
    if (rc) {
        ps_preprocessor_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void ps_preprocessor_free(ps_preprocessor *p)
{
    if (!p)
        return;
    ps_pp_pool_free(p); /* before the cleaner its workers were made for */
    ps_cleaner_free(p->cleaner);
    ps_template_free(p->tmpl);
    ps_schemas_free(p->schemas);
    ps_tokenizer_free(p->tok);
    free(p->question_key);
    free(p->sql_key);
    free(p->db_key);
    free(p->turns_path);
    free(p->turn_q_key);
    free(p->turn_sql_key);
    while (p->strings) {
        char *next;
        memcpy(&next, p->strings, sizeof next);
        free(p->strings);
        p->strings = next;
    }
    free(p->dir);
    free(p);
}
