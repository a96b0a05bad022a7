/*
 * What a set embeds so that its preprocessing can be recreated at serving
 * time (pipeline/preprocess.c): the manifest only names the rules file,
 * the template, the tokenizer file and the tables files, which may have
 * changed or gone by then. The build copies them into DIR/preprocess/
 * inside the staging directory (published atomically with the shards)
 * and lists each with its SHA-256 in the manifest's "preprocess" object:
 *   rules.json      the rules file, byte for byte
 *   template.json   the template file byte for byte, or {"preset": NAME}
 *   vocab.txt / tokenizer.json   the tokenizer file, byte for byte
 *   schemas.json    the schemas used, one canonical tables.json
 *                   (schema/schemas_write.c)
 */
#include "pipeline/build_internal.h"
#include "pipeline/preprocess_int.h"
#include "schema/template_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Writes one embedded file and lists it under `key` in `files`. */
static int put(const char *dir, json_t *files, const char *key, const char *name,
               const char *data, size_t len, ps_error *err)
{
    char rel[256], sha[65];
    snprintf(rel, sizeof rel, "%s/%s", PS_PREPROCESS_DIR, name);
    int rc = ps_write_file(dir, rel, data, len, err);
    if (rc)
        return rc;
    ps_sha256_hex(data, len, sha);
    json_object_set_new(files, key, json_pack("{sssIss}", "file", rel, "bytes", (json_int_t)len,
                                              "sha256", sha));
    return 0;
}

/* Copies the file at `path` under `key`. */
static int copy(const char *dir, json_t *files, const char *key, const char *name,
                const char *path, const char *what, ps_error *err)
{
    char *data;
    size_t len;
    int rc = ps_file_read_all(path, what, (size_t)1 << 30, &data, &len, err);
    if (rc)
        return rc;
    rc = put(dir, files, key, name, data, len, err);
    free(data);
    return rc;
}

static int template_file(const char *dir, json_t *files, const char *key, const char *name,
                         const ps_template *t, ps_error *err)
{
    ps_template_info ti;
    ps_template_get_info(t, &ti);
    ps_template *preset = NULL;
    if (ps_template_preset(ti.name, false, &preset, NULL) == 0) {
        ps_template_free(preset);
        char *text = NULL;
        json_t *o = json_pack("{ss}", "preset", ti.name);
        text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!text)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        int rc = put(dir, files, key, name, text, strlen(text), err);
        free(text);
        return rc;
    }
    return copy(dir, files, key, name, ti.name, "template file", err);
}

static int schemas_file(const char *dir, json_t *files, const char *key, const char *name,
                        const ps_schemas *s, ps_error *err)
{
    char *text;
    size_t len;
    int rc = ps_schemas_to_tables_json(s, &text, &len, err);
    if (rc)
        return rc;
    rc = put(dir, files, key, name, text, len, err);
    free(text);
    return rc;
}

json_t *ps_build_embed_preprocess(const ps_build_config *cfg, const char *dir, ps_error *err)
{
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", dir, PS_PREPROCESS_DIR);
    if (mkdir(sub, 0755) != 0 && errno != EEXIST) {
        ps_error_set(err, PS_EIO, "%s: cannot create: %s", sub, strerror(errno));
        return NULL;
    }
    json_t *files = json_object();
    int rc = 0;
    if (cfg->vocab_path) {
        const char *kind = cfg->vocab_kind ? cfg->vocab_kind : "vocab.txt";
        rc = copy(dir, files, "tokenizer",
                  strcmp(kind, "tokenizer.json") == 0 ? "tokenizer.json" : "vocab.txt",
                  cfg->vocab_path, "tokenizer file", err);
    }
    if (!rc && cfg->rules_path)
        rc = copy(dir, files, "rules", "rules.json", cfg->rules_path, "rules file", err);
    if (!rc && cfg->tmpl)
        rc = template_file(dir, files, "template", "template.json", cfg->tmpl, err);
    if (!rc && cfg->schemas)
        rc = schemas_file(dir, files, "schemas", "schemas.json", cfg->schemas, err);
    /* a mixture: each source's, "source.NAME.template" in NAME.template.json */
    for (size_t k = 0; !rc && k < cfg->n_sources; k++) {
        const ps_build_source *src = &cfg->sources[k];
        char key[160], name[160];
        snprintf(key, sizeof key, "source.%s.template", src->name);
        snprintf(name, sizeof name, "%s.template.json", src->name);
        if (src->tmpl)
            rc = template_file(dir, files, key, name, src->tmpl, err);
        snprintf(key, sizeof key, "source.%s.schemas", src->name);
        snprintf(name, sizeof name, "%s.schemas.json", src->name);
        if (!rc && src->schemas)
            rc = schemas_file(dir, files, key, name, src->schemas, err);
    }
    if (rc) {
        json_decref(files);
        return NULL;
    }
    return json_pack("{sIso}", "version", (json_int_t)PS_PREPROCESS_VERSION, "files", files);
}

/* When cleaning changed more than a share of the kept records (the
 * validate threshold serving_note_share, 20% by default), text served raw differs from what the model was trained on
 * often enough to matter (CSpider: 838 of 951, full-width punctuation),
 * so the summary and report.json say so and name the way to serve the
 * same text. */
#define PS_SERVING_ADVICE                                                                      \
    "raw text at inference would get other ids than training; serve with the set's "          \
    "preprocessor (pairshard.Preprocessor(DIR) in Python, ps_preprocessor_open in C)"

/* Whether cleaning changed over the share; *changed and *kept. */
static bool changed_share(const ps_cleaner *c, double share, json_int_t *changed,
                          json_int_t *kept)
{
    char *stats = ps_cleaner_stats_json(c);
    json_t *j = stats ? json_loads(stats, 0, NULL) : NULL;
    free(stats);
    *kept = json_integer_value(json_object_get(j, "kept"));
    *changed = json_integer_value(json_object_get(j, "changed_by_cleaning"));
    json_decref(j);
    return *kept > 0 && (double)*changed / (double)*kept > share;
}

double ps_build_serving_share(const void *validate_json)
{
    json_t *v = json_object_get(json_object_get((const json_t *)validate_json, "thresholds"),
                                "serving_note_share");
    return json_is_number(v) ? json_number_value(v) : 0.2; /* checked by the validation */
}

char *ps_build_serving_note(const ps_cleaner *c, double share)
{
    json_int_t changed, kept;
    if (!changed_share(c, share, &changed, &kept))
        return NULL;
    ps_buf b;
    ps_buf_init(&b);
    if (ps_buf_printf(&b, "  note cleaning changed %lld of %lld kept records (%.0f%%): %s\n",
                      (long long)changed, (long long)kept,
                      100.0 * (double)changed / (double)kept, PS_SERVING_ADVICE)) {
        ps_buf_free(&b);
        return NULL;
    }
    return b.data;
}

int ps_build_serving_report(const ps_cleaner *c, double share, ps_vreport *r)
{
    json_int_t changed, kept;
    if (!r || !changed_share(c, share, &changed, &kept))
        return 0;
    return ps_vreport_set_serving(r, (uint64_t)changed, (uint64_t)kept, share,
                                  PS_SERVING_ADVICE);
}

int ps_preprocess_copy(const char *from, const json_t *pre, const char *to, ps_error *err)
{
    json_t *files = json_object_get(pre, "files");
    if (!json_is_object(files))
        return 0;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/%s", to, PS_PREPROCESS_DIR);
    if (mkdir(sub, 0755) != 0 && errno != EEXIST)
        return ps_error_set(err, PS_EIO, "%s: cannot create: %s", sub, strerror(errno));
    const char *key;
    json_t *f;
    json_object_foreach(files, key, f) {
        const char *rel = json_string_value(json_object_get(f, "file"));
        const char *want = json_string_value(json_object_get(f, "sha256"));
        if (!rel || !want || strncmp(rel, PS_PREPROCESS_DIR "/", sizeof PS_PREPROCESS_DIR) ||
            strstr(rel, ".."))
            return ps_error_set(err, PS_EFORMAT, "%s/manifest.json: preprocess.files.%s is "
                                "malformed", from, key);
        char path[4096], sha[65], *data;
        size_t len;
        snprintf(path, sizeof path, "%s/%s", from, rel);
        int rc = ps_file_read_all(path, "embedded file", (size_t)1 << 30, &data, &len, err);
        if (rc)
            return rc;
        ps_sha256_hex(data, len, sha);
        rc = strcmp(sha, want) ? ps_error_set(err, PS_ECORRUPT, "%s: SHA-256 %s, but the "
                                              "manifest lists %s", path, sha, want)
                               : ps_write_file(to, rel, data, len, err);
        free(data);
        if (rc)
            return rc;
    }
    return 0;
}
