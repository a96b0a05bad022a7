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
    char rel[64], sha[65];
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

static int template_file(const char *dir, json_t *files, const ps_template *t, ps_error *err)
{
    ps_template_info ti;
    ps_template_get_info(t, &ti);
    ps_template *preset = NULL;
    if (ps_template_preset(ti.name, &preset, NULL) == 0) {
        ps_template_free(preset);
        char *text = NULL;
        json_t *o = json_pack("{ss}", "preset", ti.name);
        text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!text)
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        int rc = put(dir, files, "template", "template.json", text, strlen(text), err);
        free(text);
        return rc;
    }
    return copy(dir, files, "template", "template.json", ti.name, "template file", err);
}

static int schemas_file(const char *dir, json_t *files, const ps_schemas *s, ps_error *err)
{
    char *text;
    size_t len;
    int rc = ps_schemas_to_tables_json(s, &text, &len, err);
    if (rc)
        return rc;
    rc = put(dir, files, "schemas", "schemas.json", text, len, err);
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
        rc = template_file(dir, files, cfg->tmpl, err);
    if (!rc && cfg->schemas)
        rc = schemas_file(dir, files, cfg->schemas, err);
    if (rc) {
        json_decref(files);
        return NULL;
    }
    return json_pack("{sIso}", "version", (json_int_t)PS_PREPROCESS_VERSION, "files", files);
}
