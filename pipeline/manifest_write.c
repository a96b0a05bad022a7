/*
 * manifest.json: what the set holds and how it was made, in a fixed key
 * order and without timestamps, thread counts or paths of the staging
 * directory, so the same input and config give the same bytes.
 */
#include "pipeline/build_internal.h"
#include "pipeline/preprocess_int.h"

#include "tokenize/unicode.h"
#include "tokenize/unicode_check.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define I(x) ((json_int_t)(x))

static json_t *libraries(void)
{
    char text[1024];
    ps_dependency_versions(text, sizeof text);
    json_t *o = json_object();
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *sp = strchr(line, ' ');
        if (!sp)
            continue;
        *sp = '\0';
        json_object_set_new(o, line, json_string(sp + 1));
    }
    return o;
}

/* The Unicode versions the set's ids were made with: those the generated
 * tables assume, the linked utf8proc's and PCRE2's, and which of the two
 * the tokenizer's ids depend on; ps_preprocessor_open compares them with
 * the serving host's (preprocess_unicode.c). */
static json_t *unicode_versions(const ps_tokenizer *tok)
{
    json_t *uses = json_array();
    if (tok->unicode_deps & PS_UNIDEP_UTF8PROC)
        json_array_append_new(uses, json_string("utf8proc"));
    if (tok->unicode_deps & PS_UNIDEP_PCRE2)
        json_array_append_new(uses, json_string("pcre2"));
    return json_pack("{s{ssss}ssssso}", "tables", "ucd", ps_uni_tables_ucd_version, "pcre2",
                     ps_uni_tables_pcre2_version, "utf8proc", ps_uni_host_utf8proc(), "pcre2",
                     ps_uni_host_pcre2(), "tokenizer_uses", uses);
}

/* An id, or null when the tokenizer has none. */
static json_t *id_or_null(int32_t id) { return id >= 0 ? json_integer(id) : json_null(); }

static json_t *tokenizer_json(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    if (st->vocab_hash_rc) { /* hashed while phase 1 ran (build_run.c) */
        if (err)
            *err = st->vocab_hash_err;
        return NULL;
    }
    const char *sha = st->vocab_sha; /* "" without a vocab_path */
    ps_tokenizer_options o;
    ps_tokenizer_get_options(cfg->tokenizer, &o);
    ps_tokenizer_info info;
    ps_tokenizer_get_info(cfg->tokenizer, &info);
    json_t *t = json_pack("{sssssIsisIsbsbsbsbss?ss?ss?ss?sI}", "source",
                          cfg->vocab_kind ? cfg->vocab_kind : "vocab.txt", "vocab_sha256", sha,
                          "vocab_size", I(info.vocab_size), "id_width", st->id_width, "max_length",
                          I(cfg->max_length), "lowercase", o.lowercase, "strip_accents",
                          o.strip_accents > 0, "handle_chinese_chars", o.handle_chinese_chars,
                          "clean_text", o.clean_text, "unk_token", o.unk_token, "cls_token",
                          o.cls_token, "sep_token", o.sep_token, "continuing_subword_prefix",
                          o.continuing_subword_prefix, "max_input_chars_per_word",
                          I(o.max_input_chars_per_word));
    if (!t)
        return NULL;
    /* the model and the special ids a trainer needs (null: none, e.g. no
     * pad for GPT-2 and Llama; see docs/TOKENIZER.md) */
    if (cfg->layout == PS_LAYOUT_SEQ2SEQ)
        json_object_set_new(t, "max_target_length",
                            json_integer(I(cfg->max_target_length ? cfg->max_target_length
                                                                  : cfg->max_length)));
    json_object_set_new(t, "model", json_string(info.model));
    json_object_set_new(t, "special_ids",
                        json_pack("{sosososo}", "bos", id_or_null(info.bos_id), "eos",
                                  id_or_null(info.eos_id), "pad", id_or_null(info.pad_id), "unk",
                                  id_or_null(info.unk_id)));
    return t;
}

/* The template and schemas a set's inputs were rendered with (present
 * only when it has them, so that other sets' manifests keep their bytes). */
static json_t *text_to_sql_json(const ps_build_config *cfg, ps_error *err)
{
    json_t *o = json_object();
    if (cfg->tmpl) {
        ps_template_info ti;
        ps_template_get_info(cfg->tmpl, &ti);
        json_object_set_new(o, "template",
                            json_pack("{ssssssss?}", "name", ti.name, "sha256", ti.sha256,
                                      "prompt", ti.prompt, "completion", ti.completion));
    }
    if (cfg->schemas) {
        char digest[65];
        ps_schemas_get_digest(cfg->schemas, digest);
        json_t *files = json_array();
        for (size_t i = 0; i < cfg->n_schema_paths; i++) {
            char sha[65];
            uint64_t bytes = 0;
            if (ps_sha256_file(cfg->schema_paths[i], sha, &bytes, err)) {
                json_decref(files);
                json_decref(o);
                return NULL;
            }
            json_array_append_new(files, json_pack("{sssIss}", "path", cfg->schema_paths[i],
                                                   "bytes", I(bytes), "sha256", sha));
        }
        json_object_set_new(o, "schemas",
                            json_pack("{sIsssoss?}", "databases", I(ps_schemas_count(cfg->schemas)),
                                      "digest", digest, "files", files, "databases_dir",
                                      cfg->databases_dir));
    }
    /* what serving needs to select a schema as the build did (the prompt
     * budget is the config's, never a record's) */
    if (cfg->tmpl && cfg->schemas && cfg->max_length && ps_template_uses_schema(cfg->tmpl))
        json_object_set_new(o, "schema_selection",
                            json_pack("{sssIsb}", "mode", "question", "max_prompt_length",
                                      I(ps_build_prompt_budget(cfg)), "reject_lost_schema",
                                      cfg->reject_lost_schema != 0));
    const ps_clean_options *c = &cfg->clean;
    json_object_set_new(o, "reject_invalid_sql", json_boolean(c->reject_invalid_sql));
    json_object_set_new(o, "execute", json_boolean(c->execute));
    return o;
}

/* The shards' entries and the totals, per bucket. */
static void add_shards(const ps_build_state *st, json_t *m)
{
    const ps_build_config *cfg = st->cfg;
    json_t *shards = json_array();
    uint64_t tr = 0, tt = 0, tb = 0;
    ps_bucket_count totals[PS_BUILD_MAX_BUCKETS];
    memset(totals, 0, sizeof totals);
    for (size_t k = 0; k < cfg->shards; k++) {
        const ps_shard_result *r = &st->results[k];
        json_t *bk = json_array();
        for (size_t b = 0; b < st->n_bounds; b++) {
            const ps_bucket_count *c = &r->buckets[b];
            json_array_append_new(bk, json_pack("{sIsIsIsI}", "bucket", I(b), "records",
                                                I(c->records), "tokens", I(c->tokens), "blocks",
                                                I(c->blocks)));
            totals[b].records += c->records;
            totals[b].tokens += c->tokens;
            totals[b].blocks += c->blocks;
        }
        json_array_append_new(
            shards, json_pack("{sssIsIsIsIsIsssO}", "file", r->file, "records", I(r->records),
                              "tokens", I(r->tokens), "blocks", I(r->blocks), "bytes",
                              I(r->bytes), "uncompressed_bytes", I(r->uncompressed), "sha256",
                              r->sha256, "buckets", bk));
        json_decref(bk);
        tr += r->records;
        tt += r->tokens;
        tb += r->blocks;
    }
    json_object_set_new(m, "shards", shards);
    json_t *tbk = json_array();
    for (size_t b = 0; b < st->n_bounds; b++)
        json_array_append_new(tbk, json_pack("{sIsIsIsI}", "bound", I(st->bounds[b]), "records",
                                             I(totals[b].records), "tokens", I(totals[b].tokens),
                                             "blocks", I(totals[b].blocks)));
    json_object_set_new(m, "totals", json_pack("{sIsIsIso}", "records", I(tr), "tokens", I(tt),
                                               "blocks", I(tb), "buckets", tbk));
}

/* A mixture's "sources": each source's counts and accounting, and what
 * serving it renders with. 0, or a negative code with err set. */
static int add_sources(ps_build_state *st, json_t *m, ps_error *err)
{
    json_t *src = ps_build_sources_manifest(st);
    if (!src)
        return ps_error_set(err, PS_ENOMEM, "out of memory writing the manifest");
    json_object_set_new(m, "sources", src);
    for (size_t k = 0; k < st->n_src; k++) {
        const ps_build_config *sc = &st->src[k].cfg;
        if (!sc->tmpl && !sc->schemas)
            continue;
        json_t *t2s = text_to_sql_json(sc, err);
        if (!t2s)
            return err ? err->code : PS_ENOMEM;
        json_object_set_new(json_array_get(src, k), "text_to_sql", t2s);
    }
    return 0;
}

char *ps_build_manifest(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    json_t *m = json_object();
    json_object_set_new(m, "format", json_string("pairshard-manifest"));
    /* A pair set stays version 1, byte for byte; a causal or seq2seq set is
     * version 2 with its layout, so that a reader of version 1 refuses it
     * rather than read a prompt boundary as a token type boundary. */
    json_object_set_new(m, "format_version", json_integer(ps_set_format_version(cfg->layout)));
    if (cfg->layout != PS_LAYOUT_PAIR)
        json_object_set_new(m, "layout", json_string(ps_layout_name(cfg->layout)));
    json_object_set_new(m, "tool", json_pack("{ssss}", "name", "pairshard", "version",
                                             ps_version_string()));
    json_object_set_new(m, "libraries", libraries());
    json_object_set_new(m, "unicode", unicode_versions(cfg->tokenizer));
    json_error_t je;
    json_t *config = cfg->config_json ? json_loads(cfg->config_json, 0, &je) : json_object();
    json_object_set_new(m, "config", config ? config : json_object());
    json_t *tok = tokenizer_json(st, err);
    if (!tok) {
        json_decref(m);
        return NULL;
    }
    json_object_set_new(m, "tokenizer", tok);
    if (cfg->tmpl || cfg->schemas) {
        json_t *t2s = text_to_sql_json(cfg, err);
        if (!t2s) {
            json_decref(m);
            return NULL;
        }
        json_object_set_new(m, "text_to_sql", t2s);
    }
    if (cfg->leak) { /* the held-out sets compared: paths, bytes, sha256 */
        json_t *leak = ps_build_leak_manifest(cfg);
        if (!leak) {
            json_decref(m);
            ps_error_set(err, PS_ENOMEM, "out of memory");
            return NULL;
        }
        json_object_set_new(m, "leakage", leak);
    }
    /* the rules, template, tokenizer file and schemas, embedded beside the
     * shards so that the set's preprocessing can be served (preprocess.c);
     * written while phase 1 ran (build_run.c) */
    json_t *pre = st->preprocess;
    st->preprocess = NULL;
    if (!pre) {
        if (err)
            *err = st->preprocess_err;
        json_decref(m);
        return NULL;
    }
    json_object_set_new(m, "preprocess", pre);
    json_t *labels = json_array();
    for (size_t i = 0; i < st->labels.n; i++)
        json_array_append_new(labels, json_string(st->sorted_labels[i]));
    json_object_set_new(m, "labels", labels);
    json_t *bounds = json_array();
    for (size_t b = 0; b < st->n_bounds; b++)
        json_array_append_new(bounds, json_integer(st->bounds[b]));
    json_object_set_new(m, "buckets", bounds);
    json_object_set_new(m, "block_records", json_integer(I(cfg->block_records)));
    json_object_set_new(m, "zstd_level", json_integer(cfg->zstd_level));
    if (cfg->part_count)
        json_object_set_new(m, "part", json_pack("{sIsI}", "index", I(cfg->part_index), "count",
                                                 I(cfg->part_count)));

    add_shards(st, m);
    json_t *inputs = json_array();
    if (st->input_hash_rc) { /* hashed while phase 1 ran (build_run.c) */
        if (err)
            *err = st->input_hash_err;
        json_decref(inputs);
        json_decref(m);
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_inputs; i++)
        json_array_append_new(inputs, json_pack("{sssIss}", "path", cfg->inputs[i], "bytes",
                                                I(st->input_bytes[i]), "sha256",
                                                st->input_sha[i]));
    json_object_set_new(m, "inputs", inputs);
    char *acct = ps_cleaner_stats_json(st->cleaner);
    json_t *a = acct ? json_loads(acct, 0, &je) : NULL;
    free(acct);
    json_object_set_new(m, "accounting", a ? a : json_null());
    if (st->n_src && add_sources(st, m, err)) { /* a single-source set keeps its bytes */
        json_decref(m);
        return NULL;
    }
    char *text = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(m);
    if (!text) {
        ps_error_set(err, PS_ENOMEM, "out of memory writing the manifest");
        return NULL;
    }
    size_t n = strlen(text);
    char *withnl = realloc(text, n + 2);
    if (!withnl) {
        free(text);
        return NULL;
    }
    withnl[n] = '\n';
    withnl[n + 1] = '\0';
    return withnl;
}
