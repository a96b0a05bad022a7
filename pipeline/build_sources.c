/*
 * pairshard build: a mixture's sources (docs/BUILD.md, "Mixtures"). Each
 * source's inputs are read and cleaned by a cleaner of its own (its
 * fields, format, turns, schemas, template: ps_cleaner_add_source), its
 * records encoded with its own config (template and schemas), while the
 * build's cleaner commits every record: one dedupe across the sources,
 * the overall accounting. Beside it each source keeps its accounting and
 * statistics, and every check runs on each source's statistics as on the
 * overall ones (ps_vreport_add_source), so a check that fails for one
 * source fails the build naming it.
 */
#include "pipeline/build_chunk.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int src_stats_new(ps_build_state *st, ps_build_src *s)
{
    s->v_sql = ps_build_vsql_new(st->cleaner);
    s->v_raw = ps_vstats_new("raw");
    s->v_clean = ps_vstats_new("cleaned");
    s->v_tok = ps_vstats_new("tokenized");
    s->paired = ps_vpaired_new(20);
    if (st->cfg->layout != PS_LAYOUT_PAIR)
        s->v_gen = ps_vgen_new();
    return s->v_sql && s->v_raw && s->v_clean && s->v_tok && s->paired &&
                   (st->cfg->layout == PS_LAYOUT_PAIR || s->v_gen)
               ? 0
               : PS_ENOMEM;
}

/* One source's cleaner and config. */
static int src_setup(ps_build_state *st, size_t k, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    const ps_build_source *bs = &cfg->sources[k];
    ps_build_src *s = &st->src[k];
    int rc = ps_cleaner_add_source(st->cleaner, &bs->clean, bs->name, &s->cleaner, err);
    if (!rc && cfg->part_count)
        ps_cleaner_set_expect_share(s->cleaner, cfg->part_count);
    if (!rc) /* its own inputs alone: its ids are those a build of it alone gives */
        rc = ps_cleaner_declare_inputs(s->cleaner, cfg->inputs + bs->first_input, bs->n_inputs,
                                       err);
    if (!rc && cfg->rules_path)
        rc = ps_cleaner_load_rules(s->cleaner, cfg->rules_path, err);
    if (!rc && bs->schemas)
        rc = ps_cleaner_set_schemas(s->cleaner, bs->schemas, err);
    if (!rc && bs->tmpl)
        rc = ps_cleaner_set_template(s->cleaner, bs->tmpl, err);
    if (!rc && cfg->leak && !bs->schemas && !bs->tmpl) /* the database kind needs db_id */
        rc = ps_cleaner_read_database(s->cleaner, err);
    if (!rc && cfg->difficulty_field)
        rc = ps_cleaner_set_difficulty_field(s->cleaner, cfg->difficulty_field, err);
    if (rc)
        return ps_error_source(err, rc, bs->name);
    s->cfg = *cfg;
    s->cfg.clean = bs->clean;
    s->cfg.schemas = bs->schemas;
    s->cfg.tmpl = bs->tmpl;
    s->cfg.schema_paths = bs->schema_paths;
    s->cfg.n_schema_paths = bs->n_schema_paths;
    s->cfg.databases_dir = bs->databases_dir;
    s->cfg.sources = NULL;
    s->cfg.n_sources = 0;
    for (size_t i = bs->first_input; i < bs->first_input + bs->n_inputs; i++)
        st->input_source[i] = (uint16_t)k;
    if (src_stats_new(st, s))
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

int ps_build_sources_setup(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    size_t n = cfg->n_sources;
    if (!n)
        return 0;
    if (n > PS_BUILD_MAX_SOURCES)
        return ps_error_set(err, PS_EUSAGE, "%zu sources: at most %d", n, PS_BUILD_MAX_SOURCES);
    st->src = calloc(n, sizeof *st->src);
    st->input_source = calloc(cfg->n_inputs, sizeof *st->input_source);
    st->dup_pairs = calloc(n * n, sizeof *st->dup_pairs);
    if (!st->src || !st->input_source || !st->dup_pairs)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    st->n_src = n;
    size_t covered = 0;
    for (size_t k = 0; k < n; k++) {
        const ps_build_source *bs = &cfg->sources[k];
        if (bs->first_input != covered || bs->n_inputs == 0)
            return ps_error_set(err, PS_EUSAGE, "source '%s': its inputs must follow the "
                                "previous source's, and be at least one", bs->name);
        covered += bs->n_inputs;
        int rc = src_setup(st, k, err);
        if (rc)
            return rc;
    }
    if (covered != cfg->n_inputs)
        return ps_error_set(err, PS_EUSAGE, "the sources' inputs are not the build's inputs");
    ps_cleaner_sources_ready(st->cleaner);
    return 0;
}

ps_cleaner *ps_build_input_cleaner(const ps_build_state *st, size_t input)
{
    return st->n_src ? st->src[st->input_source[input]].cleaner : st->cleaner;
}

const ps_build_config *ps_build_input_cfg(const ps_build_state *st, size_t input)
{
    return st->n_src ? &st->src[st->input_source[input]].cfg : st->cfg;
}

long ps_build_source_of_id(const ps_build_state *st, const char *id)
{
    const char *slash = id ? strchr(id, '/') : NULL;
    if (!slash)
        return -1;
    size_t len = (size_t)(slash - id);
    for (size_t k = 0; k < st->n_src; k++)
        if (strlen(st->cfg->sources[k].name) == len && !memcmp(st->cfg->sources[k].name, id, len))
            return (long)k;
    return -1;
}

int ps_build_sources_commit(ps_build_state *st, size_t input, const char *path,
                            const ps_clean_item *it, ps_error *err)
{
    size_t a = st->input_source[input];
    if (it->res.outcome == PS_OUTCOME_DUPLICATE) {
        long b = ps_build_source_of_id(st, it->res.duplicate_of);
        if (b >= 0)
            st->dup_pairs[a * st->n_src + (size_t)b]++;
    }
    return ps_cleaner_account_source(st->src[a].cleaner, path, it, err);
}

void ps_build_sources_kept(ps_build_state *st, size_t input, uint32_t tokens)
{
    ps_build_src *s = &st->src[st->input_source[input]];
    s->records++;
    s->tokens += tokens;
}

int ps_build_sources_check_fields(const ps_build_state *st, ps_error *err)
{
    for (size_t k = 0; k < st->n_src; k++) {
        int rc = ps_cleaner_check_fields(st->src[k].cleaner, NULL, err);
        if (rc)
            return ps_error_source(err, rc, st->cfg->sources[k].name);
    }
    return 0;
}

/* A source's accounting (the shape of the manifest's), parsed. */
static json_t *src_accounting(const ps_build_src *s)
{
    char *text = ps_cleaner_stats_json(s->cleaner);
    json_t *a = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    return a;
}

/* {"spider": n, ...}: this source's duplicates of other sources' records. */
static json_t *src_duplicates(const ps_build_state *st, size_t a)
{
    json_t *o = json_object();
    for (size_t b = 0; o && b < st->n_src; b++)
        if (b != a && st->dup_pairs[a * st->n_src + b] &&
            json_object_set_new(o, st->cfg->sources[b].name,
                                json_integer((json_int_t)st->dup_pairs[a * st->n_src + b]))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

int ps_build_sources_validate(ps_build_state *st, ps_error *err)
{
    const ps_build_config *cfg = st->cfg;
    for (size_t k = 0; k < st->n_src; k++) {
        ps_build_src *s = &st->src[k];
        ps_vgen_checks gc = {s->v_gen, cfg->layout == PS_LAYOUT_CAUSAL,
                             s->cfg.clean.turns_path != NULL, s->history_turns,
                             s->history_hidden};
        ps_vreport *r = NULL;
        /* the whole check table, as on the overall statistics */
        int rc = ps_build_validate(cfg->validate_json, s->v_raw, s->v_clean, s->v_tok, s->paired,
                                   s->v_sql, st->bounds, st->n_bounds, cfg->threads,
                                   cfg->part_count > 1, &gc, &r, err);
        if (rc)
            return ps_error_source(err, rc, cfg->sources[k].name);
        json_t *extra = json_pack("{sIsIsoso}", "records", (json_int_t)s->records, "tokens",
                                  (json_int_t)s->tokens, "accounting", src_accounting(s),
                                  "duplicates_of", src_duplicates(st, k));
        rc = extra ? ps_vreport_add_source(st->report, cfg->sources[k].name, r, extra)
                   : PS_ENOMEM;
        json_decref(extra);
        ps_vreport_free(r);
        if (rc)
            return ps_error_set(err, rc, "out of memory writing the report");
    }
    return 0;
}

json_t *ps_build_sources_manifest(const ps_build_state *st)
{
    json_t *a = json_array();
    for (size_t k = 0; a && k < st->n_src; k++) {
        const ps_build_src *s = &st->src[k];
        json_t *o = json_pack("{sssIsIsoso}", "name", st->cfg->sources[k].name, "records",
                              (json_int_t)s->records, "tokens", (json_int_t)s->tokens,
                              "accounting", src_accounting(s), "duplicates_of",
                              src_duplicates(st, k));
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

void ps_build_sources_free(ps_build_state *st)
{
    for (size_t k = 0; k < st->n_src; k++) {
        ps_build_src *s = &st->src[k];
        ps_vstats_free(s->v_raw);
        ps_vstats_free(s->v_clean);
        ps_vstats_free(s->v_tok);
        ps_vpaired_free(s->paired);
        ps_vsql_free(s->v_sql);
        ps_vgen_free(s->v_gen);
    }
    free(st->src);
    free(st->input_source);
    free(st->dup_pairs);
    st->src = NULL;
    st->input_source = NULL;
    st->dup_pairs = NULL;
    st->n_src = 0;
}
