/*
 * The accounting a manifest states, checked: every record a build read is
 * kept, rejected (for a reason) or a duplicate, once in the totals, once
 * under its label (or unlabeled, or label_unreadable) and once under its
 * input, and every kept record is in a shard under its label. So
 * records_in = kept + rejected + duplicates, rejected = the sum over
 * rejected_by_reason, each label's four counts add up the same way, the
 * labels (with unlabeled and label_unreadable) and the inputs each add up
 * to the totals, kept = totals.records, and, after a verification has
 * read the blocks, each label's kept = the records stored with that label.
 * A manifest edited so that one sum still holds (kept and records_in both
 * raised by 5) breaks another, and the message names it.
 */
#define _GNU_SOURCE /* qsort_r */
#include "store/inspect.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct acct4 {
    uint64_t in, kept, rejected, duplicates;
} acct4;

typedef struct actx {
    const char *where; /* "DIR/manifest.json" */
    ps_error *err;
} actx;

static const char *const FIELD[4] = {"records_in", "kept", "rejected", "duplicates"};

static uint64_t *slot(acct4 *a, int k)
{
    return k == 0 ? &a->in : k == 1 ? &a->kept : k == 2 ? &a->rejected : &a->duplicates;
}

static int not_count(actx *c, const char *obj, const char *key)
{
    return ps_error_set(c->err, PS_ECORRUPT,
                        "%s: accounting%s%s.%s is missing or not a count (a non-negative "
                        "integer)",
                        c->where, *obj ? "." : "", obj, key);
}

/* obj's four counts; `name` says where obj is, for messages ("" for the
 * accounting itself). Then records_in = kept + rejected + duplicates. */
static int get4(actx *c, json_t *obj, const char *name, acct4 *out)
{
    if (!json_is_object(obj))
        return ps_error_set(c->err, PS_ECORRUPT, "%s: accounting%s%s is missing or not an "
                            "object", c->where, *name ? "." : "", name);
    for (int k = 0; k < 4; k++) {
        json_t *v = json_object_get(obj, FIELD[k]);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return not_count(c, name, FIELD[k]);
        *slot(out, k) = (uint64_t)json_integer_value(v);
    }
    if (out->in != out->kept + out->rejected + out->duplicates)
        return ps_error_set(c->err, PS_ECORRUPT,
                            "%s: accounting%s%s: records_in %llu is not kept %llu + rejected "
                            "%llu + duplicates %llu (%llu)",
                            c->where, *name ? "." : "", name, (unsigned long long)out->in,
                            (unsigned long long)out->kept, (unsigned long long)out->rejected,
                            (unsigned long long)out->duplicates,
                            (unsigned long long)(out->kept + out->rejected + out->duplicates));
    return 0;
}

static void add4(acct4 *a, const acct4 *b)
{
    for (int k = 0; k < 4; k++)
        *slot(a, k) += *slot((acct4 *)b, k);
}

/* `parts` (what `what` names) must add up to `total`, field by field. */
static int same4(actx *c, const acct4 *total, const acct4 *parts, const char *what)
{
    for (int k = 0; k < 4; k++)
        if (*slot((acct4 *)total, k) != *slot((acct4 *)parts, k))
            return ps_error_set(c->err, PS_ECORRUPT,
                                "%s: accounting: %s %llu, but %s add up to %llu", c->where,
                                FIELD[k], (unsigned long long)*slot((acct4 *)total, k), what,
                                (unsigned long long)*slot((acct4 *)parts, k));
    return 0;
}

/* accounting.KEY in *out: 0 with NULL when absent (not stated, not
 * checked), PS_ECORRUPT when it is not an array (`array`) or an object. */
static int member(actx *c, json_t *acct, const char *key, bool array, json_t **out)
{
    *out = json_object_get(acct, key);
    if (*out && (array ? !json_is_array(*out) : !json_is_object(*out)))
        return ps_error_set(c->err, PS_ECORRUPT, "%s: accounting.%s is not an %s", c->where,
                            key, array ? "array" : "object");
    return 0;
}

/* rejected = the sum over rejected_by_reason (when stated). */
static int check_reasons(actx *c, json_t *acct, const acct4 *t)
{
    json_t *by;
    int rc = member(c, acct, "rejected_by_reason", false, &by);
    if (rc || !by)
        return rc;
    uint64_t sum = 0;
    const char *key;
    json_t *v;
    json_object_foreach(by, key, v)
    {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return not_count(c, "rejected_by_reason", key);
        sum += (uint64_t)json_integer_value(v);
    }
    if (sum != t->rejected)
        return ps_error_set(c->err, PS_ECORRUPT,
                            "%s: accounting: rejected %llu, but rejected_by_reason adds up to "
                            "%llu", c->where, (unsigned long long)t->rejected,
                            (unsigned long long)sum);
    return 0;
}

/* The inputs' counts add up to the totals (when stated). */
static int check_inputs(actx *c, json_t *acct, const acct4 *t)
{
    json_t *inputs;
    int rc = member(c, acct, "inputs", true, &inputs);
    if (rc || !inputs)
        return rc;
    acct4 sum = {0, 0, 0, 0};
    size_t i;
    json_t *e;
    json_array_foreach(inputs, i, e)
    {
        char name[48];
        snprintf(name, sizeof name, "inputs[%zu]", i);
        acct4 one;
        if ((rc = get4(c, e, name, &one)))
            return rc;
        add4(&sum, &one);
    }
    return same4(c, t, &sum, "the inputs' counts");
}

/* Label ids in name order (the manifest's labels are sorted when a
 * build or merge writes them, but a check must not rely on it). */
static int cmp_id(const void *a, const void *b, void *labels)
{
    char *const *l = labels;
    return strcmp(l[*(const size_t *)a], l[*(const size_t *)b]);
}

typedef struct by_name {
    const ps_manifest *m;
    const size_t *ids; /* sorted by name */
} by_name;

/* The manifest's label id of `name`, or -1. */
static long label_id(const by_name *bn, const char *name)
{
    size_t lo = 0, hi = bn->m->n_labels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int d = strcmp(bn->m->labels[bn->ids[mid]], name);
        if (d == 0)
            return (long)bn->ids[mid];
        if (d < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Each label's kept against the records stored with it (rep, when the
 * blocks were read) and against the manifest's labels. */
static int check_label_kept(actx *c, const by_name *bn, const ps_verify_report *rep,
                            const char *name, uint64_t kept)
{
    long id = label_id(bn, name);
    if (id < 0) {
        if (kept)
            return ps_error_set(c->err, PS_ECORRUPT,
                                "%s: accounting.labels.%s: kept %llu, but the manifest's "
                                "labels do not name %s",
                                c->where, name, (unsigned long long)kept, name);
        return 0;
    }
    if (rep && rep->label_records && rep->label_records[id] != kept)
        return ps_error_set(c->err, PS_ECORRUPT,
                            "%s: accounting.labels.%s: kept %llu, but the shards hold %llu "
                            "records labelled %s",
                            c->where, name, (unsigned long long)kept,
                            (unsigned long long)rep->label_records[id], name);
    return 0;
}

/* Every label's counts add up, and with unlabeled and label_unreadable
 * to the totals; each label's kept is what the shards hold. */
static int check_labels(actx *c, const ps_manifest *m, const ps_verify_report *rep,
                        json_t *acct, const acct4 *t)
{
    json_t *labels;
    int rc = member(c, acct, "labels", false, &labels);
    if (rc || !labels)
        return rc;
    json_t *lc = json_object_get(acct, "label_count");
    if (lc && (!json_is_integer(lc) || (size_t)json_integer_value(lc) != json_object_size(labels)))
        return ps_error_set(c->err, PS_ECORRUPT,
                            "%s: accounting: label_count is not the %zu labels it counts",
                            c->where, json_object_size(labels));
    size_t *ids = malloc((m->n_labels + 1) * sizeof *ids);
    if (!ids)
        return ps_error_set(c->err, PS_ENOMEM, "out of memory");
    for (size_t i = 0; i < m->n_labels; i++)
        ids[i] = i;
    qsort_r(ids, m->n_labels, sizeof *ids, cmp_id, m->labels);
    by_name bn = {m, ids};
    acct4 sum = {0, 0, 0, 0}, one;
    const char *key;
    json_t *v;
    json_object_foreach(labels, key, v)
    {
        char name[160];
        snprintf(name, sizeof name, "labels.%.120s", key);
        if ((rc = get4(c, v, name, &one)) ||
            (rc = check_label_kept(c, &bn, rep, key, one.kept)))
            break;
        add4(&sum, &one);
    }
    free(ids);
    static const char *const rest[] = {"unlabeled", "label_unreadable"};
    uint64_t kept_unlabeled = 0;
    for (int k = 0; !rc && k < 2; k++) {
        json_t *o = json_object_get(acct, rest[k]);
        if (o && !(rc = get4(c, o, rest[k], &one))) {
            add4(&sum, &one);
            kept_unlabeled += one.kept;
        }
    }
    if (!rc)
        rc = same4(c, t, &sum, "the labels' counts with unlabeled and label_unreadable");
    if (!rc && rep && rep->label_records && kept_unlabeled != rep->unlabeled)
        rc = ps_error_set(c->err, PS_ECORRUPT,
                          "%s: accounting: %llu records kept without a label, but the shards "
                          "hold %llu",
                          c->where, (unsigned long long)kept_unlabeled,
                          (unsigned long long)rep->unlabeled);
    return rc;
}

/* A set of several sources: each source's accounting balances as the
 * set's does, its kept is its stored records, and the sources' counts
 * (records_in, kept, rejected, duplicates, each rejection reason) add up
 * to the set's. A source without an accounting (merged from a set that
 * stated none) is not summed. */
static int check_sources(actx *c, const ps_manifest *m, json_t *acct, const acct4 *t)
{
    acct4 sum = {0, 0, 0, 0};
    bool all = true;
    json_t *by = json_object_get(acct, "rejected_by_reason");
    for (size_t i = 0; i < m->n_sources; i++) {
        json_t *sa = m->source_accounting ? m->source_accounting[i] : NULL;
        if (!sa) {
            all = false;
            continue;
        }
        char name[PS_MANIFEST_MAX_SOURCE_NAME + 16];
        snprintf(name, sizeof name, "sources.%s", m->source_names[i]);
        actx sc = {c->where, c->err};
        acct4 s;
        int rc = get4(&sc, sa, name, &s);
        if (!rc)
            rc = check_reasons(&sc, sa, &s);
        if (rc)
            return rc;
        if (s.kept != m->source_counts[i].records)
            return ps_error_set(c->err, PS_ECORRUPT, "%s: sources[%zu] (\"%s\"): kept %llu, "
                                "but its records are %llu", c->where, i, m->source_names[i],
                                (unsigned long long)s.kept,
                                (unsigned long long)m->source_counts[i].records);
        add4(&sum, &s);
    }
    if (all && m->n_sources && (sum.in != t->in || sum.kept != t->kept ||
                                sum.rejected != t->rejected || sum.duplicates != t->duplicates))
        return ps_error_set(c->err, PS_ECORRUPT,
                            "%s: the sources' accounting adds up to %llu in = %llu kept + %llu "
                            "rejected + %llu duplicates, the set's is %llu = %llu + %llu + %llu",
                            c->where, (unsigned long long)sum.in, (unsigned long long)sum.kept,
                            (unsigned long long)sum.rejected, (unsigned long long)sum.duplicates,
                            (unsigned long long)t->in, (unsigned long long)t->kept,
                            (unsigned long long)t->rejected, (unsigned long long)t->duplicates);
    const char *reason;
    json_t *v;
    json_object_foreach(by, reason, v)
    {
        uint64_t n = 0;
        for (size_t i = 0; all && i < m->n_sources; i++)
            n += (uint64_t)json_integer_value(
                json_object_get(json_object_get(m->source_accounting[i], "rejected_by_reason"),
                                reason));
        if (all && m->n_sources && n != (uint64_t)json_integer_value(v))
            return ps_error_set(c->err, PS_ECORRUPT,
                                "%s: rejected_by_reason.%s: the sources' add up to %llu, the "
                                "set's is %llu", c->where, reason, (unsigned long long)n,
                                (unsigned long long)json_integer_value(v));
    }
    return 0;
}

int ps_accounting_check(const ps_manifest *m, const ps_verify_report *rep, const char *where,
                        ps_error *err)
{
    json_t *acct = (json_t *)m->accounting;
    if (!acct)
        return 0; /* a set that states none (written by hand) */
    actx c = {where, err};
    acct4 t;
    int rc = get4(&c, acct, "", &t);
    if (rc)
        return rc;
    json_t *bal = json_object_get(acct, "balanced");
    if (bal && !json_is_true(bal))
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: accounting: \"balanced\" is not true, though records_in = "
                            "kept + rejected + duplicates",
                            where);
    if ((rc = check_reasons(&c, acct, &t)) || (rc = check_inputs(&c, acct, &t)) ||
        (rc = check_labels(&c, m, rep, acct, &t)) || (rc = check_sources(&c, m, acct, &t)))
        return rc;
    if (m->has_totals && t.kept != m->totals.records)
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: accounting: kept %llu, but totals.records is %llu", where,
                            (unsigned long long)t.kept, (unsigned long long)m->totals.records);
    uint64_t stored = 0;
    for (size_t k = 0; k < m->n_shards; k++)
        stored += rep ? rep->shards[k].records : m->shards[k].records;
    if (t.kept != stored)
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: accounting: kept %llu, but the shards %s %llu records", where,
                            (unsigned long long)t.kept, rep ? "hold" : "list",
                            (unsigned long long)stored);
    return 0;
}
