/* pairshard build: the config's "sources" (cli/build_sources.h). */
#include "cli/build_sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ps_cli_config_path(char ***owned, size_t *n_owned, const char *config,
                               const char *value)
{
    const char *slash = strrchr(config, '/');
    if (!value || value[0] == '/' || !strcmp(value, "-") || !slash)
        return value;
    size_t dlen = (size_t)(slash - config) + 1, vlen = strlen(value);
    char *p = malloc(dlen + vlen + 1);
    char **no = p ? realloc(*owned, (*n_owned + 1) * sizeof *no) : NULL;
    if (!no) {
        free(p);
        return NULL;
    }
    *owned = no;
    memcpy(p, config, dlen);
    memcpy(p + dlen, value, vlen + 1);
    (*owned)[(*n_owned)++] = p;
    return p;
}

/* A source's name: [A-Za-z0-9_.-]+, so that "<name>/<id>" splits at its
 * first '/' and the name is a file name. */
static bool name_ok(const char *n)
{
    if (!*n || strlen(n) > 64 || !strcmp(n, ".") || !strcmp(n, ".."))
        return false;
    for (const char *c = n; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '.' || *c == '-'))
            return false;
    return true;
}

/* Options a source may not set: the build's alone. */
static bool global_only(const char *key)
{
    static const char *const G[] = {"rules", "keep-duplicates", "keep_duplicates"};
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++)
        if (!strcmp(key, G[i]))
            return true;
    return false;
}

bool ps_cli_template_file(const char *key, const char *value)
{
    static const char *const presets[] = {"pair", "question", "picard", "ddl"};
    if (strcmp(key, "template") != 0)
        return false;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(value, presets[i]))
            return false;
    return true;
}

static bool path_key(const char *key, const char *v)
{
    return !strcmp(key, "schema") || !strcmp(key, "databases") || ps_cli_template_file(key, v);
}

static int add_input(const char ***inputs, size_t *n, size_t *cap, const char *path)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        const char **ni = realloc(*inputs, nc * sizeof *ni);
        if (!ni)
            return -1;
        *inputs = ni;
        *cap = nc;
    }
    (*inputs)[(*n)++] = path;
    return 0;
}

/* One member of source `name`'s object. 0, or -1 after printing why. */
static int source_member(ps_cli_sources *s, size_t k, const char *config, const char *key,
                         json_t *v)
{
    ps_clean_args *a = &s->args[k];
    const char *name = s->src[k].name;
    if (global_only(key)) {
        fprintf(stderr, "pairshard build: %s: source '%s': \"%s\" is the build's, for every "
                "source: set it at the top of the config\n", config, name, key);
        return -1;
    }
    json_t *one = v;
    size_t i = 0, n = json_is_array(v) ? json_array_size(v) : 1;
    if (json_is_array(v) && strcmp(key, "schema") != 0)
        goto bad;
    for (i = 0; i < n; i++) {
        if (json_is_array(v))
            one = json_array_get(v, i);
        char num[64];
        const char *text = NULL;
        if (json_is_string(one)) {
            text = json_string_value(one);
        } else if (json_is_integer(one)) {
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(one));
            text = num;
        } else if (json_is_false(one))
            continue;
        else if (!json_is_true(one))
            goto bad;
        if (text && path_key(key, text) &&
            !(text = ps_cli_config_path(&s->owned, &s->n_owned, config, text)))
            goto bad;
        int r = ps_clean_args_apply(a, "build", key, text);
        if (r < 0)
            return -1;
        if (r == 0) {
            fprintf(stderr, "pairshard build: %s: source '%s': \"%s\" is not a per-source "
                    "option (a source takes \"name\", \"inputs\" and the cleaning and "
                    "text-to-SQL options)\n", config, name, key);
            return -1;
        }
    }
    return 0;
bad:
    fprintf(stderr, "pairshard build: %s: source '%s': bad value for \"%s\"\n", config, name,
            key);
    return -1;
}

/* Source k's object: name first checked, then inputs and options. */
static int source_load(ps_cli_sources *s, size_t k, json_t *o, const char *config,
                       const ps_clean_args *base, const char ***inputs, size_t *n_inputs,
                       size_t *cap)
{
    json_t *jn = json_object_get(o, "name"), *ji = json_object_get(o, "inputs");
    const char *name = json_is_string(jn) ? json_string_value(jn) : NULL;
    if (!json_is_object(o) || !name || !name_ok(name)) {
        fprintf(stderr, "pairshard build: %s: source %zu needs a \"name\" of letters, digits, "
                "'_', '.' and '-' (at most 64)\n", config, k);
        return -1;
    }
    for (size_t j = 0; j < k; j++)
        if (!strcmp(s->src[j].name, name)) {
            fprintf(stderr, "pairshard build: %s: two sources are named '%s'\n", config, name);
            return -1;
        }
    s->src[k].name = name;
    s->args[k] = *base;
    s->src[k].first_input = *n_inputs;
    size_t i;
    json_t *e;
    if (!json_is_array(ji) || json_array_size(ji) == 0) {
        fprintf(stderr, "pairshard build: %s: source '%s' needs \"inputs\": a list of files\n",
                config, name);
        return -1;
    }
    json_array_foreach(ji, i, e)
    {
        const char *in = json_is_string(e) ? json_string_value(e) : NULL;
        if (!in || !(in = ps_cli_config_path(&s->owned, &s->n_owned, config, in)) ||
            add_input(inputs, n_inputs, cap, in)) {
            fprintf(stderr, "pairshard build: %s: source '%s': bad input %zu\n", config, name,
                    i);
            return -1;
        }
    }
    s->src[k].n_inputs = json_array_size(ji);
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (strcmp(key, "name") != 0 && strcmp(key, "inputs") != 0 &&
            source_member(s, k, config, key, v))
            return -1;
    }
    return 0;
}

int ps_cli_sources_load(ps_cli_sources *s, json_t *spec, const char *config,
                        const ps_clean_args *base, int layout, const char ***inputs,
                        size_t *n_inputs, size_t *cap)
{
    size_t n = json_is_array(spec) ? json_array_size(spec) : 0;
    if (!n || n > PS_BUILD_MAX_SOURCES) {
        fprintf(stderr, "pairshard build: %s: \"sources\" is a list of 1 to %d sources\n",
                config, PS_BUILD_MAX_SOURCES);
        return -1;
    }
    if (*n_inputs) {
        fprintf(stderr, "pairshard build: %s: with \"sources\" every input belongs to a "
                "source: give none at the top of the config or on the command line\n", config);
        return -1;
    }
    if (base->n_schemas || base->databases_dir || base->template_name || base->opts.turns_path) {
        fprintf(stderr, "pairshard build: %s: with \"sources\", schemas, databases, template "
                "and turns are set per source\n", config);
        return -1;
    }
    s->src = calloc(n, sizeof *s->src);
    s->args = calloc(n, sizeof *s->args);
    s->t2s = calloc(n, sizeof *s->t2s);
    if (!s->src || !s->args || !s->t2s)
        return -1;
    s->n = n;
    for (size_t k = 0; k < n; k++) {
        if (source_load(s, k, json_array_get(spec, k), config, base, inputs, n_inputs, cap))
            return -1;
        ps_clean_args *a = &s->args[k];
        ps_clean_args_finish(a);
        a->layout = layout;
        char cmd[96];
        snprintf(cmd, sizeof cmd, "build: source '%s'", s->src[k].name);
        if (ps_clean_args_text2sql(a, cmd, NULL, &s->t2s[k]))
            return -1;
        s->src[k].clean = a->opts;
        s->src[k].schemas = s->t2s[k].schemas;
        s->src[k].tmpl = s->t2s[k].tmpl;
        s->src[k].schema_paths = a->schema_paths;
        s->src[k].n_schema_paths = a->n_schemas;
        s->src[k].databases_dir = a->databases_dir;
    }
    return 0;
}

json_t *ps_cli_sources_config(const ps_cli_sources *s, const char *const *inputs,
                              json_t *(*clean)(const ps_clean_args *a),
                              json_t *(*t2s)(const ps_clean_args *a))
{
    json_t *arr = json_array();
    for (size_t k = 0; arr && k < s->n; k++) {
        json_t *in = json_array();
        for (size_t i = 0; in && i < s->src[k].n_inputs; i++)
            json_array_append_new(in, json_string(inputs[s->src[k].first_input + i]));
        json_t *o = json_pack("{sssoso}", "name", s->src[k].name, "inputs", in, "clean",
                              clean(&s->args[k]));
        json_t *t = o ? t2s(&s->args[k]) : NULL;
        if (t)
            json_object_set_new(o, "text_to_sql", t);
        if (!o || json_array_append_new(arr, o)) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

void ps_cli_sources_free(ps_cli_sources *s)
{
    for (size_t k = 0; s->t2s && k < s->n; k++)
        ps_clean_t2s_free(&s->t2s[k]);
    free(s->t2s);
    free(s->args);
    free(s->src);
    for (size_t i = 0; i < s->n_owned; i++)
        free(s->owned[i]);
    free(s->owned);
    memset(s, 0, sizeof *s);
}
