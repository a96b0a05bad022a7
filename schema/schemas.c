/* The set of a run's database schemas: kept sorted by db_id (bytes), so a
 * lookup is a binary search and the digest does not depend on the order
 * in which files were loaded. */
#include "schema/schema.h"

#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>

struct ps_schemas {
    ps_schema **items; /* sorted by db_id */
    size_t n, cap;
};

int ps_schemas_create(ps_schemas **out, ps_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return ps_error_set(err, PS_ENOMEM, "schemas: out of memory");
    return 0;
}

void ps_schema_free(ps_schema *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_tables; i++) {
        free(d->tables[i]);
        if (d->tables_natural)
            free(d->tables_natural[i]);
    }
    free(d->tables_natural);
    for (size_t i = 0; i < d->n_columns; i++) {
        free(d->columns[i].natural);
        free(d->columns[i].name);
        free(d->columns[i].type);
        free(d->columns[i].examples);
    }
    free(d->tables);
    free(d->columns);
    free(d->fks);
    free(d->db_id);
    free(d->origin);
    free(d->db_path);
    free(d);
}

void ps_schemas_free(ps_schemas *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        ps_schema_free(s->items[i]);
    free(s->items);
    free(s);
}

size_t ps_schemas_count(const ps_schemas *s) { return s ? s->n : 0; }

const ps_schema *ps_schemas_at(const ps_schemas *s, size_t i) { return s->items[i]; }

/* memcmp order of (key, len) against a NUL-terminated db_id. */
static int cmp_id(const char *key, size_t len, const char *db_id)
{
    size_t dl = strlen(db_id);
    int c = memcmp(key, db_id, len < dl ? len : dl);
    if (c)
        return c;
    return len < dl ? -1 : len > dl;
}

/* The position of db_id, or where it would be inserted (*found false). */
static size_t search(const ps_schemas *s, const char *key, size_t len, bool *found)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_id(key, len, s->items[mid]->db_id);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    *found = false;
    return lo;
}

ps_schema *ps_schemas_find_mut(ps_schemas *s, const char *db_id, size_t len)
{
    bool found;
    size_t i = s ? search(s, db_id, len, &found) : 0;
    return s && found ? s->items[i] : NULL;
}

const ps_schema *ps_schemas_find(const ps_schemas *s, const char *db_id, size_t len)
{
    return ps_schemas_find_mut((ps_schemas *)s, db_id, len);
}

bool ps_schema_equal(const ps_schema *a, const ps_schema *b)
{
    if (strcmp(a->db_id, b->db_id) || a->n_tables != b->n_tables ||
        a->n_columns != b->n_columns || a->n_fks != b->n_fks)
        return false;
    for (size_t i = 0; i < a->n_tables; i++)
        if (strcmp(a->tables[i], b->tables[i]))
            return false;
    for (size_t i = 0; i < a->n_columns; i++) {
        const ps_schema_column *x = &a->columns[i], *y = &b->columns[i];
        if (strcmp(x->name, y->name) || strcmp(x->type, y->type) || x->table != y->table ||
            x->primary != y->primary)
            return false;
    }
    for (size_t i = 0; i < a->n_fks; i++)
        if (a->fks[i].column != b->fks[i].column || a->fks[i].ref_column != b->fks[i].ref_column)
            return false;
    return true;
}

int ps_schemas_add(ps_schemas *s, ps_schema *d, ps_error *err)
{
    bool found;
    size_t at = search(s, d->db_id, strlen(d->db_id), &found);
    if (found) {
        const ps_schema *old = s->items[at];
        int rc = 0;
        if (!ps_schema_equal(old, d))
            rc = ps_error_set(err, PS_EUSAGE,
                              "database '%s' is defined differently by %s and by %s", d->db_id,
                              old->origin ? old->origin : "?", d->origin ? d->origin : "?");
        ps_schema_free(d);
        return rc;
    }
    if (ps_array_grow(&s->items, &s->cap, s->n, sizeof *s->items, 64)) {
        ps_schema_free(d);
        return ps_error_set(err, PS_ENOMEM, "schemas: out of memory");
    }
    memmove(s->items + at + 1, s->items + at, (s->n - at) * sizeof *s->items);
    s->items[at] = d;
    s->n++;
    return 0;
}

/* ---- digest ---------------------------------------------------------------
 * The canonical text: per schema in db_id order, each string as its length
 * in decimal, ':' and its bytes; numbers as decimal and ';'. Length
 * prefixes make it unambiguous whatever the names contain. */

static void put_str(struct sha256_ctx *c, const char *str)
{
    char num[32];
    size_t len = strlen(str);
    int w = snprintf(num, sizeof num, "%zu:", len);
    sha256_update(c, (size_t)w, (const uint8_t *)num);
    sha256_update(c, len, (const uint8_t *)str);
}

static void put_num(struct sha256_ctx *c, uint64_t v)
{
    char num[32];
    int w = snprintf(num, sizeof num, "%llu;", (unsigned long long)v);
    sha256_update(c, (size_t)w, (const uint8_t *)num);
}

static void digest_one(struct sha256_ctx *c, const ps_schema *d)
{
    put_str(c, "db");
    put_str(c, d->db_id);
    put_num(c, d->n_tables);
    for (size_t i = 0; i < d->n_tables; i++) {
        put_str(c, d->tables[i]);
        /* natural names steer schema selection, so they are part of what
         * a set was built from; absent: digests as before */
        if (d->tables_natural && d->tables_natural[i])
            put_str(c, d->tables_natural[i]);
    }
    put_num(c, d->n_columns);
    for (size_t i = 0; i < d->n_columns; i++) {
        put_num(c, d->columns[i].table);
        put_str(c, d->columns[i].name);
        put_str(c, d->columns[i].type);
        put_num(c, d->columns[i].primary);
        if (d->columns[i].examples) /* absent without files: digests as before */
            put_str(c, d->columns[i].examples);
        if (d->columns[i].natural)
            put_str(c, d->columns[i].natural);
    }
    put_num(c, d->n_fks);
    for (size_t i = 0; i < d->n_fks; i++) {
        put_num(c, d->fks[i].column);
        put_num(c, d->fks[i].ref_column);
    }
}

void ps_schemas_get_digest(const ps_schemas *s, char hex[65])
{
    struct sha256_ctx c;
    sha256_init(&c);
    put_str(&c, "pairshard-schemas-1");
    for (size_t i = 0; s && i < s->n; i++)
        digest_one(&c, s->items[i]);
    uint8_t dg[SHA256_DIGEST_SIZE];
    sha256_digest(&c, sizeof dg, dg);
    for (size_t i = 0; i < sizeof dg; i++)
        snprintf(hex + 2 * i, 3, "%02x", dg[i]);
}
