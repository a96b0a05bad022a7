/*
 * Reading DIR/manifest.json back (the schema is docs/FORMAT.md). The
 * manifest is input like any other: every field is type-checked, every
 * count bounded before anything is allocated from it, and shard file
 * names must be plain names, so nothing read from a manifest can point
 * outside the set directory.
 */
#include "store/inspect.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
/* Inlined, as in reader/: libpairshard-reader does not link libxxhash. */
#define XXH_INLINE_ALL
#include <xxhash.h>

bool ps_shard_name_ok(const char *name)
{
    static const char pre[] = "shard-", suf[] = ".mdb";
    size_t n = strlen(name), lp = sizeof pre - 1, ls = sizeof suf - 1;
    if (n <= lp + ls || n > 64 || strncmp(name, pre, lp) || strcmp(name + n - ls, suf))
        return false;
    for (size_t i = lp; i < n - ls; i++)
        if (name[i] < '0' || name[i] > '9')
            return false;
    return true; /* so no '/', and never "." or ".." */
}

void ps_manifest_free(ps_manifest *m)
{
    if (!m)
        return;
    for (size_t i = 0; m->labels && i < m->n_labels; i++)
        free(m->labels[i]);
    free(m->labels);
    free(m->label_kept);
    for (size_t i = 0; m->shards && i < m->n_shards; i++) {
        free(m->shards[i].file);
        free(m->shards[i].buckets);
    }
    free(m->shards);
    free(m->bounds);
    free(m->total_buckets);
    free(m->tool_version);
    json_decref(m->accounting);
    for (size_t i = 0; m->source_names && i < m->n_sources; i++)
        free(m->source_names[i]);
    free(m->source_names);
    free(m->source_counts);
    free(m->lowers);
    for (size_t i = 0; m->source_accounting && i < m->n_sources; i++)
        json_decref(m->source_accounting[i]);
    free(m->source_accounting);
    free(m);
}

/* Reads the whole file (at most PS_MANIFEST_MAX_BYTES; a regular file). */
static int slurp(const char *path, char **text, size_t *len, ps_error *err)
{
    int rc = ps_file_read_all(path, "manifest", PS_MANIFEST_MAX_BYTES, text, len, err);
    if (rc == PS_ENOENT)
        return ps_error_set(err, PS_ENOENT, "%s: no manifest (not a shard set?)", path);
    if (rc == PS_ELIMIT) { /* a manifest that large is not one pairshard wrote */
        if (err)
            err->code = PS_EFORMAT;
        return PS_EFORMAT;
    }
    return rc;
}

typedef struct ctx {
    const char *path;
    ps_error *err;
} ctx;

#define BAD(c, ...) ps_error_set((c)->err, PS_EFORMAT, __VA_ARGS__)

/* A required non-negative integer member <= max. */
static int get_u64(ctx *c, json_t *obj, const char *key, const char *where, uint64_t max,
                   uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) > max)
        return BAD(c, "%s: %s%s\"%s\" is missing or not an integer in 0..%llu", c->path, where,
                   *where ? ": " : "", key, (unsigned long long)max);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int get_sha(ctx *c, json_t *obj, const char *key, const char *where, char out[65],
                   bool required)
{
    json_t *v = json_object_get(obj, key);
    if (!v && !required) {
        out[0] = '\0';
        return 0;
    }
    const char *s = json_string_value(v);
    if (!s || strlen(s) != 64 || strspn(s, "0123456789abcdef") != 64)
        return BAD(c, "%s: %s: \"%s\" is not a SHA-256 in lowercase hex", c->path, where, key);
    memcpy(out, s, 65);
    return 0;
}

/* A bucket count array: one object per bucket index, in order. */
static int get_counts(ctx *c, json_t *arr, size_t n, const char *where, bool with_bound,
                      const uint32_t *bounds, ps_mf_count *out)
{
    if (!json_is_array(arr) || json_array_size(arr) != n)
        return BAD(c, "%s: %s: \"buckets\" must be an array of %zu entries", c->path, where, n);
    char w[96];
    for (size_t b = 0; b < n; b++) {
        json_t *o = json_array_get(arr, b);
        snprintf(w, sizeof w, "%s: buckets[%zu]", where, b);
        if (!json_is_object(o))
            return BAD(c, "%s: %s is not an object", c->path, w);
        uint64_t idx;
        if (with_bound) {
            if (get_u64(c, o, "bound", w, UINT32_MAX, &idx))
                return PS_EFORMAT;
            if (idx != bounds[b])
                return BAD(c, "%s: %s: bound %llu, the manifest's buckets say %u", c->path, w,
                           (unsigned long long)idx, bounds[b]);
        } else {
            if (get_u64(c, o, "bucket", w, UINT32_MAX, &idx))
                return PS_EFORMAT;
            if (idx != b)
                return BAD(c, "%s: %s: \"bucket\" is %llu, expected %zu", c->path, w,
                           (unsigned long long)idx, b);
        }
        if (get_u64(c, o, "records", w, UINT64_MAX >> 1, &out[b].records) ||
            get_u64(c, o, "tokens", w, UINT64_MAX >> 1, &out[b].tokens))
            return PS_EFORMAT;
        /* totals' buckets may omit blocks */
        if (json_object_get(o, "blocks") || !with_bound) {
            if (get_u64(c, o, "blocks", w, UINT32_MAX, &out[b].blocks))
                return PS_EFORMAT;
        } else {
            out[b].blocks = UINT64_MAX;
        }
    }
    return 0;
}

static int parse_shard(ctx *c, ps_manifest *m, json_t *o, size_t k)
{
    char w[64];
    snprintf(w, sizeof w, "shards[%zu]", k);
    if (!json_is_object(o))
        return BAD(c, "%s: %s is not an object", c->path, w);
    ps_mf_shard *s = &m->shards[k];
    const char *file = json_string_value(json_object_get(o, "file"));
    if (!file)
        return BAD(c, "%s: %s: \"file\" is missing", c->path, w);
    if (!ps_shard_name_ok(file))
        return BAD(c, "%s: %s: file \"%.80s\" is not a plain shard-NNNNN.mdb name (paths in a "
                   "manifest may not leave the set directory)",
                   c->path, w, file);
    for (size_t j = 0; j < k; j++)
        if (!strcmp(m->shards[j].file, file))
            return BAD(c, "%s: %s: file %s is listed twice", c->path, w, file);
    if (!(s->file = strdup(file)))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    if (get_u64(c, o, "records", w, UINT64_MAX >> 1, &s->records) ||
        get_u64(c, o, "tokens", w, UINT64_MAX >> 1, &s->tokens) ||
        get_u64(c, o, "blocks", w, UINT64_MAX >> 1, &s->blocks) ||
        get_u64(c, o, "bytes", w, UINT64_MAX >> 1, &s->bytes) ||
        get_sha(c, o, "sha256", w, s->sha256, true))
        return PS_EFORMAT;
    if (json_object_get(o, "uncompressed_bytes")) {
        if (get_u64(c, o, "uncompressed_bytes", w, UINT64_MAX >> 1, &s->uncompressed_bytes))
            return PS_EFORMAT;
        s->has_uncompressed = true;
    }
    s->buckets = calloc(m->n_buckets ? m->n_buckets : 1, sizeof *s->buckets);
    if (!s->buckets)
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    return get_counts(c, json_object_get(o, "buckets"), m->n_buckets, w, false, NULL,
                      s->buckets);
}

/* The layout: version 1 sets are pair sets and say nothing (a "layout"
 * other than pair there would be read by a 0.1 reader as a pair set);
 * version 2 sets name theirs. */
static int parse_layout(ctx *c, ps_manifest *m, json_t *root)
{
    json_t *l = json_object_get(root, "layout");
    if (!l) {
        if (m->format_version >= 2)
            return BAD(c, "%s: format version %d without \"layout\"", c->path,
                       m->format_version);
        m->layout = PS_LAYOUT_PAIR;
        return 0;
    }
    int layout = json_is_string(l) ? ps_layout_parse(json_string_value(l)) : PS_EINVAL;
    if (layout < 0)
        return BAD(c, "%s: \"layout\" must be \"pair\", \"causal\" or \"seq2seq\"", c->path);
    if (m->format_version < 2 && layout != PS_LAYOUT_PAIR)
        return BAD(c, "%s: \"layout\": \"%s\" needs format version 2, not %d", c->path,
                   json_string_value(l), m->format_version);
    m->layout = layout;
    return 0;
}

/* A source name: 1..PS_MANIFEST_MAX_SOURCE_NAME bytes of printable ASCII
 * other than '=' and ',' (so `--weights name=w,...` can name any), no
 * space. */
static bool source_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > PS_MANIFEST_MAX_SOURCE_NAME)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~' || s[i] == '=' || s[i] == ',')
            return false;
    return true;
}

/* "sources": [{"name", "records", "tokens", "accounting"}, ...] (optional). */
static int parse_sources(ctx *c, ps_manifest *m, json_t *root)
{
    json_t *arr = json_object_get(root, "sources");
    if (!arr)
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) < 1 ||
        json_array_size(arr) > PS_MAX_SOURCES)
        return BAD(c, "%s: \"sources\" must be an array of 1..%u sources", c->path,
                   PS_MAX_SOURCES);
    size_t n = json_array_size(arr);
    if (!(m->source_names = calloc(n, sizeof *m->source_names)) ||
        !(m->source_counts = calloc(n, sizeof *m->source_counts)) ||
        !(m->source_accounting = calloc(n, sizeof *m->source_accounting)))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    m->n_sources = n;
    char w[48];
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        snprintf(w, sizeof w, "sources[%zu]", i);
        const char *name = json_string_value(json_object_get(o, "name"));
        if (!json_is_object(o) || !name || !source_name_ok(name))
            return BAD(c, "%s: %s: \"name\" must be 1..%u printable characters without "
                       "space, '=' or ','", c->path, w, PS_MANIFEST_MAX_SOURCE_NAME);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(m->source_names[j], name))
                return BAD(c, "%s: %s: the name \"%s\" is also sources[%zu]'s", c->path, w,
                           name, j);
        if (!(m->source_names[i] = strdup(name)))
            return ps_error_set(c->err, PS_ENOMEM, "out of memory");
        if (get_u64(c, o, "records", w, UINT64_MAX >> 1, &m->source_counts[i].records) ||
            get_u64(c, o, "tokens", w, UINT64_MAX >> 1, &m->source_counts[i].tokens))
            return PS_EFORMAT;
        json_t *a = json_object_get(o, "accounting");
        if (a && !json_is_object(a))
            return BAD(c, "%s: %s: \"accounting\" is not an object", c->path, w);
        m->source_accounting[i] = json_incref(a); /* its sums: store/accounting.c */
    }
    return 0;
}

static int parse(ctx *c, ps_manifest *m, json_t *root)
{
    if (!json_is_object(root))
        return BAD(c, "%s: not a JSON object", c->path);
    const char *fmt = json_string_value(json_object_get(root, "format"));
    if (!fmt || strcmp(fmt, "pairshard-manifest"))
        return BAD(c, "%s: \"format\" is not \"pairshard-manifest\" (not a pairshard manifest)",
                   c->path);
    json_t *ver = json_object_get(root, "format_version");
    if (!json_is_integer(ver) || json_integer_value(ver) < 1)
        return BAD(c, "%s: \"format_version\" is missing or not a positive integer", c->path);
    if (json_integer_value(ver) > PS_MANIFEST_FORMAT_VERSION)
        return ps_error_set(c->err, PS_EVERSION,
                            "%s: manifest format version %lld is newer than this pairshard "
                            "supports (%d); read it with a newer pairshard",
                            c->path, (long long)json_integer_value(ver),
                            PS_MANIFEST_FORMAT_VERSION);
    m->format_version = (int)json_integer_value(ver);
    if (parse_layout(c, m, root))
        return PS_EFORMAT;
    const char *tv = json_string_value(json_object_get(json_object_get(root, "tool"), "version"));
    if (!(m->tool_version = strdup(tv ? tv : "")))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");

    json_t *tok = json_object_get(root, "tokenizer");
    if (!json_is_object(tok))
        return BAD(c, "%s: \"tokenizer\" is missing", c->path);
    json_t *ae = json_object_get(json_object_get(root, "config"), "append_eos");
    m->append_eos = json_is_boolean(ae) ? json_is_true(ae) : -1;
    json_t *eos = json_object_get(json_object_get(tok, "special_ids"), "eos");
    m->eos_id = json_is_integer(eos) ? (int64_t)json_integer_value(eos) : -1;
    uint64_t v;
    if (get_sha(c, tok, "vocab_sha256", "tokenizer", m->vocab_sha256, false) ||
        get_u64(c, tok, "vocab_size", "tokenizer", UINT32_MAX, &m->vocab_size) ||
        get_u64(c, tok, "id_width", "tokenizer", 4, &v))
        return PS_EFORMAT;
    if (v != 2 && v != 4)
        return BAD(c, "%s: tokenizer: id_width %llu (must be 2 or 4)", c->path,
                   (unsigned long long)v);
    m->id_width = (int)v;

    json_t *labels = json_object_get(root, "labels");
    if (!json_is_array(labels) || json_array_size(labels) > PS_MANIFEST_MAX_LABELS)
        return BAD(c, "%s: \"labels\" must be an array of at most %u names", c->path,
                   PS_MANIFEST_MAX_LABELS);
    m->n_labels = json_array_size(labels);
    m->labels = calloc(m->n_labels ? m->n_labels : 1, sizeof *m->labels);
    if (!m->labels)
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    json_t *acct = json_object_get(root, "accounting");
    if (acct) /* checked by verification (accounting.c), not needed to read the set */
        m->accounting = json_incref(acct);
    json_t *acct_labels = json_object_get(acct, "labels");
    if (json_is_object(acct_labels) && !(m->label_kept = calloc(m->n_labels + 1, 8)))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; i < m->n_labels; i++) {
        const char *s = json_string_value(json_array_get(labels, i));
        if (!s)
            return BAD(c, "%s: labels[%zu] is not a string", c->path, i);
        if (!(m->labels[i] = strdup(s)))
            return ps_error_set(c->err, PS_ENOMEM, "out of memory");
        if (m->label_kept) {
            json_t *kept = json_object_get(json_object_get(acct_labels, s), "kept");
            m->label_kept[i] = json_is_integer(kept) && json_integer_value(kept) >= 0
                                   ? (uint64_t)json_integer_value(kept)
                                   : 0;
        }
    }

    json_t *buckets = json_object_get(root, "buckets");
    if (!json_is_array(buckets) || json_array_size(buckets) < 1 ||
        json_array_size(buckets) > PS_MANIFEST_MAX_BUCKETS)
        return BAD(c, "%s: \"buckets\" must be an array of 1..%u bounds", c->path,
                   PS_MANIFEST_MAX_BUCKETS);
    m->n_buckets = json_array_size(buckets);
    if (!(m->bounds = calloc(m->n_buckets, sizeof *m->bounds)))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    for (size_t b = 0; b < m->n_buckets; b++) {
        json_t *x = json_array_get(buckets, b);
        if (!json_is_integer(x) || json_integer_value(x) < 1 ||
            json_integer_value(x) > UINT32_MAX ||
            (b && (uint64_t)json_integer_value(x) <= m->bounds[b - 1]))
            return BAD(c, "%s: buckets[%zu] is not a bound above the previous one", c->path, b);
        m->bounds[b] = (uint32_t)json_integer_value(x);
    }
    if (get_u64(c, root, "block_records", "", 1u << 24, &m->block_records))
        return PS_EFORMAT;
    if (!m->block_records)
        return BAD(c, "%s: \"block_records\" is 0", c->path);
    json_t *lvl = json_object_get(root, "zstd_level");
    m->zstd_level = json_is_integer(lvl) ? (int)json_integer_value(lvl) : -1000;

    json_t *shards = json_object_get(root, "shards");
    if (!json_is_array(shards) || json_array_size(shards) > PS_MANIFEST_MAX_SHARDS)
        return BAD(c, "%s: \"shards\" must be an array of at most %u shards", c->path,
                   PS_MANIFEST_MAX_SHARDS);
    m->n_shards = json_array_size(shards);
    if (!(m->shards = calloc(m->n_shards ? m->n_shards : 1, sizeof *m->shards)))
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    for (size_t k = 0; k < m->n_shards; k++) {
        int rc = parse_shard(c, m, json_array_get(shards, k), k);
        if (rc)
            return rc;
    }

    int src_rc = parse_sources(c, m, root);
    if (src_rc)
        return src_rc;
    json_t *tot = json_object_get(root, "totals");
    if (tot) {
        if (!json_is_object(tot))
            return BAD(c, "%s: \"totals\" is not an object", c->path);
        if (get_u64(c, tot, "records", "totals", UINT64_MAX >> 1, &m->totals.records) ||
            get_u64(c, tot, "tokens", "totals", UINT64_MAX >> 1, &m->totals.tokens) ||
            get_u64(c, tot, "blocks", "totals", UINT64_MAX >> 1, &m->totals.blocks))
            return PS_EFORMAT;
        if (!(m->total_buckets = calloc(m->n_buckets, sizeof *m->total_buckets)))
            return ps_error_set(c->err, PS_ENOMEM, "out of memory");
        if (get_counts(c, json_object_get(tot, "buckets"), m->n_buckets, "totals", true,
                       m->bounds, m->total_buckets))
            return PS_EFORMAT;
        m->has_totals = true;
    }
    return 0;
}

int ps_manifest_parse(const char *text, size_t len, const char *path, ps_manifest **out,
                      ps_error *err)
{
    *out = NULL;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return ps_error_set(err, PS_EFORMAT, "%s:%d:%d: %s", path, je.line, je.column, je.text);
    ps_manifest *m = calloc(1, sizeof *m);
    if (!m) {
        json_decref(root);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    m->xxh64 = XXH64(text, len, 0);
    ctx c = {path, err};
    int rc = parse(&c, m, root);
    json_decref(root);
    if (rc) {
        ps_manifest_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int ps_manifest_read(const char *dir, ps_manifest **out, ps_error *err)
{
    *out = NULL;
    size_t plen = strlen(dir) + sizeof "/manifest.json";
    char *path = malloc(plen);
    if (!path)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    snprintf(path, plen, "%s/manifest.json", dir);
    char *text = NULL;
    size_t len = 0;
    int rc = slurp(path, &text, &len, err);
    if (!rc)
        rc = ps_manifest_parse(text, len, path, out, err);
    free(text);
    free(path);
    return rc;
}
