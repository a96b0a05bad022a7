/* validate/paired.c — the same records before and after cleaning: outcome
 * accounting (per label, per reason and rule), the distribution of each kept
 * record's length change, and the records most changed by cleaning. */
#include "validate/vinternal.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define EXAMPLE_TEXT_MAX 400 /* bytes kept of each example text */
#define MAX_EXAMPLES_LIMIT 1000

ps_vpaired *ps_vpaired_new(size_t max_examples)
{
    ps_vpaired *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->max_examples = max_examples > MAX_EXAMPLES_LIMIT ? MAX_EXAMPLES_LIMIT : max_examples;
    if (p->max_examples) {
        p->ex = calloc(p->max_examples + 1, sizeof *p->ex);
        if (!p->ex) {
            free(p);
            return NULL;
        }
    }
    return p;
}

static void ex_free(ps_vexample *e)
{
    free(e->id);
    free(e->source);
    free(e->label);
    free(e->outcome);
    free(e->reason);
    free(e->rule);
    free(e->q_before);
    free(e->q_after);
    free(e->s_before);
    free(e->s_after);
    memset(e, 0, sizeof *e);
}

void ps_vpaired_free(ps_vpaired *p)
{
    if (!p)
        return;
    free(p->labels);
    ps_strmap_free(&p->names);
    for (size_t i = 0; i < p->nreasons; i++) {
        free(p->reasons[i].reason);
        free(p->reasons[i].rule);
    }
    free(p->reasons);
    ps_vrejections_free(p);
    ps_vid_collisions_free(p);
    for (size_t i = 0; i < p->nex; i++)
        ex_free(&p->ex[i]);
    free(p->ex);
    free(p);
}

const ps_vpaired_label *ps_vpaired_find_label(const ps_vpaired *p, const char *name)
{
    long i = name ? ps_strmap_find(&p->names, name) : -1;
    return i < 0 ? NULL : &p->labels[i];
}

static ps_vpaired_label *get_label(ps_vpaired *p, const char *name, uint32_t number)
{
    void *records = p->labels;
    long i = ps_strmap_slot_numbered(&p->names, name, number, &records, &p->cap,
                                     sizeof *p->labels);
    p->labels = records;
    if (i < 0)
        return NULL;
    p->nlabels = p->names.n;
    p->labels[i].name = p->names.keys[i];
    return &p->labels[i];
}

static int add_reason(ps_vpaired *p, const char *reason, const char *rule, uint64_t count)
{
    for (size_t i = 0; i < p->nreasons; i++) {
        ps_vreason *r = &p->reasons[i];
        if (!strcmp(r->reason, reason) && ps_str_eq_opt(r->rule, rule)) {
            r->count += count;
            return 0;
        }
    }
    if (ps_array_grow(&p->reasons, &p->rcap, p->nreasons, sizeof *p->reasons, 8))
        return PS_ENOMEM;
    ps_vreason *r = &p->reasons[p->nreasons];
    r->reason = strdup(reason);
    r->rule = ps_strdup_opt(rule);
    r->count = count;
    if (!r->reason || (rule && !r->rule)) {
        free(r->reason);
        free(r->rule);
        return PS_ENOMEM;
    }
    p->nreasons++;
    return 0;
}

/* Code points of a UTF-8 text (bytes that are not continuation bytes). */
static uint64_t chars(const char *s, size_t n)
{
    uint64_t cont = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        /* continuation bytes 10xxxxxx: bit 7 set, bit 6 clear */
        uint64_t t = ((w & ~(w << 1)) & 0x8080808080808080ull) >> 7;
        cont += (t * 0x0101010101010101ull) >> 56;
    }
    for (; i < n; i++)
        cont += ((unsigned char)s[i] & 0xC0) == 0x80;
    return n - cont;
}

static unsigned rel_bin(uint64_t before, uint64_t after)
{
    uint64_t d = after > before ? after - before : before - after;
    uint64_t den = before ? before : 1;
    if (d >= den)
        return 100u;
    /* floor(100 d / den) in integers: the long double quotient below
     * rounds to the same floor while den < 2^64 / 101, and the integer
     * division is several times cheaper (one per field and record) */
    if (den < (uint64_t)1 << 56)
        return (unsigned)(d * 100 / den);
    long double r = (long double)d * 100.0L / (long double)den;
    return r >= 100.0L ? 100u : (unsigned)floorl(r);
}

static double rel_change(uint64_t before, uint64_t after)
{
    uint64_t d = after > before ? after - before : before - after;
    return (double)d / (double)(before ? before : 1);
}

static char *dup_prefix(const char *s, size_t n)
{
    if (!s)
        return NULL;
    if (n > EXAMPLE_TEXT_MAX) {
        n = EXAMPLE_TEXT_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return ps_strndup(s, n);
}

static bool ex_before(const ps_vexample *a, const ps_vexample *b)
{
    if (a->score != b->score)
        return a->score > b->score;
    return a->seq < b->seq;
}

/* Inserts *e (taking ownership) into the top-K list if it belongs there. */
static void ex_offer(ps_vpaired *p, ps_vexample *e)
{
    if (!p->max_examples || (p->nex == p->max_examples && !ex_before(e, &p->ex[p->nex - 1]))) {
        ex_free(e);
        return;
    }
    size_t pos = p->nex;
    while (pos > 0 && ex_before(e, &p->ex[pos - 1]))
        pos--;
    if (p->nex == p->max_examples) {
        ex_free(&p->ex[p->nex - 1]);
        p->nex--;
    }
    memmove(&p->ex[pos + 1], &p->ex[pos], (p->nex - pos) * sizeof *p->ex);
    p->ex[pos] = *e;
    p->nex++;
}

static const char *outcome_name(ps_outcome o)
{
    switch (o) {
    case PS_OUTCOME_KEPT: return "kept";
    case PS_OUTCOME_REJECTED: return "rejected";
    default: return "duplicate";
    }
}

static bool text_changed(const char *before, size_t blen, const char *after, size_t alen)
{
    return alen != blen || memcmp(after, before, alen) != 0;
}

/* What ps_vpair.counted lets a caller give, from the texts (both before
 * are set; the after ones only count with both after). */
static void count_texts(ps_vpair *r)
{
    r->question_before_chars = (uint32_t)chars(r->question_before, r->question_before_len);
    r->sql_before_chars = (uint32_t)chars(r->sql_before, r->sql_before_len);
    if (r->question_after && r->sql_after) {
        r->question_after_chars = (uint32_t)chars(r->question_after, r->question_after_len);
        r->sql_after_chars = (uint32_t)chars(r->sql_after, r->sql_after_len);
        r->question_changed = text_changed(r->question_before, r->question_before_len,
                                           r->question_after, r->question_after_len);
        r->sql_changed =
            text_changed(r->sql_before, r->sql_before_len, r->sql_after, r->sql_after_len);
    }
    r->counted = true;
}

/* r with its counts: r itself when the caller gave them, else *copy,
 * counted here (r's texts before must be set). */
static const ps_vpair *with_counts(const ps_vpair *r, ps_vpair *copy)
{
    if (r->counted)
        return r;
    *copy = *r;
    count_texts(copy);
    return copy;
}

/* Whether cleaning emptied a rejected record. */
static bool emptied(const ps_vpair *r)
{
    return r->outcome == PS_OUTCOME_REJECTED && r->reason &&
           !strcmp(r->reason, "empty_after_cleaning");
}

/* The changes of a kept record's lengths into the histograms (the
 * label's too: l may be NULL). */
static void add_changes(ps_vpaired *p, ps_vpaired_label *l, const ps_vpair *r)
{
    uint64_t bf[2] = {r->question_before_chars, r->sql_before_chars};
    uint64_t af[2] = {r->question_after_chars, r->sql_after_chars};
    for (int f = 0; f < 2; f++) {
        unsigned rb = rel_bin(bf[f], af[f]);
        p->rel[f][rb]++;
        if (l)
            l->rel[f][rb]++;
        if (af[f] == bf[f]) {
            p->zero[f]++;
        } else if (af[f] < bf[f]) {
            uint64_t d = bf[f] - af[f];
            p->shrink[f][ps_vbin_of(d > UINT32_MAX ? UINT32_MAX : (uint32_t)d)]++;
        } else {
            uint64_t d = af[f] - bf[f];
            p->grow[f][ps_vbin_of(d > UINT32_MAX ? UINT32_MAX : (uint32_t)d)]++;
        }
    }
    p->changed_question += r->question_changed;
    p->changed_sql += r->sql_changed;
}

int ps_vpaired_add_counts(ps_vpaired *p, const ps_vpair *r)
{
    p->records_in++;
    ps_vpaired_label *l = NULL;
    if (r->label) {
        l = get_label(p, r->label, r->label_number);
        if (!l)
            return PS_ENOMEM;
        l->records_in++;
    } else {
        p->unlabeled++;
    }
    uint64_t *total = r->outcome == PS_OUTCOME_KEPT        ? &p->kept
                      : r->outcome == PS_OUTCOME_DUPLICATE ? &p->duplicates
                                                           : &p->rejected;
    uint64_t *own = !l                                     ? NULL
                    : r->outcome == PS_OUTCOME_KEPT        ? &l->kept
                    : r->outcome == PS_OUTCOME_DUPLICATE   ? &l->duplicates
                                                           : &l->rejected;
    ++*total;
    if (own)
        ++*own;
    if (emptied(r)) {
        p->empty_after_cleaning++;
        if (l)
            l->empty_after_cleaning++;
    }
    if (!r->question_before || !r->sql_before) {
        p->unparsed++;
        return 0;
    }
    ps_vpair copy;
    r = with_counts(r, &copy); /* the caller may have given the texts alone */
    if (r->outcome == PS_OUTCOME_KEPT && r->question_after && r->sql_after)
        add_changes(p, l, r);
    return 0;
}

int ps_vpaired_add_ordered(ps_vpaired *p, const ps_vpair *r)
{
    uint64_t seq = p->seq++;
    if (r->outcome == PS_OUTCOME_KEPT && r->id_collision && ps_vid_collisions_add(p, r->id, 1))
        return PS_ENOMEM;
    const char *why = r->reason ? r->reason : "unknown";
    if (r->outcome == PS_OUTCOME_REJECTED && /* the reasons in the order they first come */
        (add_reason(p, why, r->rule, 1) ||
         (r->input && ps_vrejections_add(p, r->input, why, r->rule, 1, r->source, r->detail))))
        return PS_ENOMEM;
    if (!r->question_before || !r->sql_before)
        return 0;
    /* an example: a kept record changed by cleaning, or one cleaning emptied */
    bool have_after = r->question_after && r->sql_after, empty_after = emptied(r);
    if (!p->max_examples || !((r->outcome == PS_OUTCOME_KEPT && have_after) || empty_after))
        return 0;
    ps_vpair copy;
    r = with_counts(r, &copy);
    uint64_t qb = r->question_before_chars, sb = r->sql_before_chars;
    uint64_t qa = have_after ? r->question_after_chars : 0,
             sa = have_after ? r->sql_after_chars : 0;
    double score = empty_after ? 1.0 : fmax(rel_change(qb, qa), rel_change(sb, sa));
    if (!(score > 0))
        return 0;
    if (p->nex == p->max_examples && p->ex[p->nex - 1].score >= score)
        return 0;
    ps_vexample e = {0};
    e.score = score;
    e.seq = seq;
    e.dq = have_after ? (int64_t)qa - (int64_t)qb : -(int64_t)qb;
    e.ds = have_after ? (int64_t)sa - (int64_t)sb : -(int64_t)sb;
    e.id = ps_strdup_opt(r->id);
    e.source = ps_strdup_opt(r->source);
    e.label = ps_strdup_opt(r->label);
    e.outcome = strdup(outcome_name(r->outcome));
    e.reason = ps_strdup_opt(r->reason);
    e.rule = ps_strdup_opt(r->rule);
    e.q_before = dup_prefix(r->question_before, r->question_before_len);
    e.s_before = dup_prefix(r->sql_before, r->sql_before_len);
    e.q_after = have_after ? dup_prefix(r->question_after, r->question_after_len) : strdup("");
    e.s_after = have_after ? dup_prefix(r->sql_after, r->sql_after_len) : strdup("");
    if (!e.outcome || !e.q_before || !e.s_before || !e.q_after || !e.s_after ||
        (r->id && !e.id) || (r->source && !e.source) || (r->label && !e.label) ||
        (r->reason && !e.reason) || (r->rule && !e.rule)) {
        ex_free(&e);
        return PS_ENOMEM;
    }
    ex_offer(p, &e);
    return 0;
}

int ps_vpaired_add(ps_vpaired *p, const ps_vpair *r)
{
    ps_vpair copy;
    if (r->question_before && r->sql_before) /* counted once, for both parts */
        r = with_counts(r, &copy);
    int rc = ps_vpaired_add_counts(p, r);
    return rc ? rc : ps_vpaired_add_ordered(p, r);
}

static int ex_copy(ps_vexample *d, const ps_vexample *s, uint64_t seq_offset)
{
    *d = *s;
    d->seq = s->seq + seq_offset;
    d->id = ps_strdup_opt(s->id);
    d->source = ps_strdup_opt(s->source);
    d->label = ps_strdup_opt(s->label);
    d->outcome = ps_strdup_opt(s->outcome);
    d->reason = ps_strdup_opt(s->reason);
    d->rule = ps_strdup_opt(s->rule);
    d->q_before = ps_strdup_opt(s->q_before);
    d->q_after = ps_strdup_opt(s->q_after);
    d->s_before = ps_strdup_opt(s->s_before);
    d->s_after = ps_strdup_opt(s->s_after);
    if ((s->id && !d->id) || (s->source && !d->source) || (s->label && !d->label) ||
        (s->outcome && !d->outcome) || (s->reason && !d->reason) || (s->rule && !d->rule) ||
        (s->q_before && !d->q_before) || (s->q_after && !d->q_after) ||
        (s->s_before && !d->s_before) || (s->s_after && !d->s_after)) {
        ex_free(d);
        return PS_ENOMEM;
    }
    return 0;
}

int ps_vpaired_merge(ps_vpaired *into, const ps_vpaired *from)
{
    if (!into || !from)
        return PS_EINVAL;
    uint64_t off = into->seq; /* from's examples come after into's records */
    for (size_t i = 0; i < from->nlabels; i++) {
        const ps_vpaired_label *f = &from->labels[i];
        ps_vpaired_label *l = get_label(into, f->name, 0);
        if (!l)
            return PS_ENOMEM;
        l->records_in += f->records_in;
        l->kept += f->kept;
        l->rejected += f->rejected;
        l->duplicates += f->duplicates;
        l->empty_after_cleaning += f->empty_after_cleaning;
        for (int k = 0; k < 2; k++)
            for (size_t b = 0; b < PS_VREL_BINS; b++)
                l->rel[k][b] += f->rel[k][b];
    }
    for (size_t i = 0; i < from->nreasons; i++)
        if (add_reason(into, from->reasons[i].reason, from->reasons[i].rule, from->reasons[i].count))
            return PS_ENOMEM;
    if (ps_vrejections_merge(into, from) || ps_vid_collisions_merge(into, from))
        return PS_ENOMEM;
    into->records_in += from->records_in;
    into->seq += from->seq;
    into->kept += from->kept;
    into->rejected += from->rejected;
    into->duplicates += from->duplicates;
    into->unparsed += from->unparsed;
    into->unlabeled += from->unlabeled;
    into->empty_after_cleaning += from->empty_after_cleaning;
    into->changed_question += from->changed_question;
    into->changed_sql += from->changed_sql;
    for (int k = 0; k < 2; k++) {
        into->zero[k] += from->zero[k];
        for (size_t b = 0; b < PS_VBINS; b++) {
            into->shrink[k][b] += from->shrink[k][b];
            into->grow[k][b] += from->grow[k][b];
        }
        for (size_t b = 0; b < PS_VREL_BINS; b++)
            into->rel[k][b] += from->rel[k][b];
    }
    for (size_t i = 0; i < from->nex; i++) {
        ps_vexample e;
        if (ex_copy(&e, &from->ex[i], off))
            return PS_ENOMEM;
        ex_offer(into, &e);
    }
    return 0;
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static int cmp_reason(const void *a, const void *b)
{
    const ps_vreason *x = a, *y = b;
    int c = strcmp(x->reason, y->reason);
    if (c)
        return c;
    if (!x->rule || !y->rule)
        return (x->rule != NULL) - (y->rule != NULL);
    return strcmp(x->rule, y->rule);
}

static int cmp_plabel(const void *a, const void *b)
{
    return strcmp(((const ps_vpaired_label *)a)->name, ((const ps_vpaired_label *)b)->name);
}

json_t *ps_vpaired_to_json(const ps_vpaired *p)
{
    if (!p)
        return NULL;
    json_t *o = json_object();
    if (!o)
        return NULL;
    ps_vjson_cache *c = ps_vjson_cache_new(); /* NULL: histograms uncached */
    int bad = 0;
    bad |= json_object_set_new(o, "records_in", ps_vjson_uint(p->records_in));
    bad |= json_object_set_new(o, "kept", ps_vjson_uint(p->kept));
    bad |= json_object_set_new(o, "rejected", ps_vjson_uint(p->rejected));
    bad |= json_object_set_new(o, "duplicates", ps_vjson_uint(p->duplicates));
    bad |= json_object_set_new(
        o, "balanced", json_boolean(p->records_in == p->kept + p->rejected + p->duplicates));
    bad |= json_object_set_new(o, "unparsed", ps_vjson_uint(p->unparsed));
    bad |= json_object_set_new(o, "unlabeled", ps_vjson_uint(p->unlabeled));
    bad |= json_object_set_new(o, "empty_after_cleaning", ps_vjson_uint(p->empty_after_cleaning));
    bad |= json_object_set_new(o, "changed_question", ps_vjson_uint(p->changed_question));
    bad |= json_object_set_new(o, "changed_sql", ps_vjson_uint(p->changed_sql));
    bad |= json_object_set_new(o, "retention",
                               json_real(p->records_in ? (double)p->kept / (double)p->records_in : 0));
    /* rejections by reason and rule, sorted */
    ps_vreason *rs = p->nreasons ? malloc(p->nreasons * sizeof *rs) : NULL;
    json_t *ra = json_array();
    if ((p->nreasons && !rs) || !ra) {
        free(rs);
        json_decref(ra);
        json_decref(o);
        return NULL;
    }
    if (p->nreasons) {
        memcpy(rs, p->reasons, p->nreasons * sizeof *rs);
        qsort(rs, p->nreasons, sizeof *rs, cmp_reason);
    }
    for (size_t i = 0; i < p->nreasons; i++)
        bad |= json_array_append_new(ra, json_pack("{sssoso}", "reason", rs[i].reason, "rule",
                                                   str_or_null(rs[i].rule), "count",
                                                   ps_vjson_uint(rs[i].count)));
    free(rs);
    bad |= json_object_set_new(o, "rejected_by", ra);
    json_t *rbi = ps_vrejections_to_json(p);
    bad |= rbi ? json_object_set_new(o, "rejected_by_input", rbi) : -1;
    json_t *ids = ps_vid_collisions_to_json(p);
    bad |= ids ? json_object_set_new(o, "id_collisions", ids) : -1;
    json_t *ch = json_object();
    for (int f = 0; ch && f < 2; f++)
        bad |= json_object_set_new(
            ch, ps_vfield_names[f],
            json_pack("{sosososo}", "zero", ps_vjson_uint(p->zero[f]), "shrink",
                      ps_vjson_hist_cached(c, p->shrink[f], PS_VBINS), "grow",
                      ps_vjson_hist_cached(c, p->grow[f], PS_VBINS), "relative",
                      ps_vjson_hist_cached(c, p->rel[f], PS_VREL_BINS)));
    bad |= json_object_set_new(o, "change", ch ? ch : json_null());
    ps_vpaired_label *ls = p->nlabels ? malloc(p->nlabels * sizeof *ls) : NULL;
    json_t *la = json_array();
    if ((p->nlabels && !ls) || !la) {
        free(ls);
        json_decref(la);
        json_decref(o);
        ps_vjson_cache_free(c);
        return NULL;
    }
    if (p->nlabels) {
        memcpy(ls, p->labels, p->nlabels * sizeof *ls);
        qsort(ls, p->nlabels, sizeof *ls, cmp_plabel);
    }
    for (size_t i = 0; i < p->nlabels; i++) {
        const ps_vpaired_label *l = &ls[i];
        bad |= json_array_append_new(
            la, json_pack("{sssosososososfs{soso}}", "label", l->name, "records_in",
                          ps_vjson_uint(l->records_in), "kept", ps_vjson_uint(l->kept), "rejected",
                          ps_vjson_uint(l->rejected), "duplicates", ps_vjson_uint(l->duplicates),
                          "empty_after_cleaning", ps_vjson_uint(l->empty_after_cleaning),
                          "retention",
                          l->records_in ? (double)l->kept / (double)l->records_in : 0.0,
                          "relative", "question_chars",
                          ps_vjson_hist_cached(c, l->rel[0], PS_VREL_BINS), "sql_chars",
                          ps_vjson_hist_cached(c, l->rel[1], PS_VREL_BINS)));
    }
    free(ls);
    bad |= json_object_set_new(o, "labels", la);
    bad |= json_object_set_new(o, "max_examples", ps_vjson_uint(p->max_examples));
    json_t *ea = json_array();
    for (size_t i = 0; ea && i < p->nex; i++) {
        const ps_vexample *e = &p->ex[i];
        bad |= json_array_append_new(
            ea, json_pack("{sosososssososfsIsIsssssssssI}", "id", str_or_null(e->id), "source",
                          str_or_null(e->source), "label", str_or_null(e->label), "outcome",
                          e->outcome, "reason", str_or_null(e->reason), "rule",
                          str_or_null(e->rule), "relative_change", e->score, "question_delta",
                          (json_int_t)e->dq, "sql_delta", (json_int_t)e->ds, "question_before",
                          e->q_before, "question_after", e->q_after, "sql_before", e->s_before,
                          "sql_after", e->s_after, "seq", (json_int_t)e->seq));
    }
    bad |= json_object_set_new(o, "examples", ea ? ea : json_null());
    ps_vjson_cache_free(c);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

#define NFIELDS(t) (sizeof(t) / sizeof(t)[0])

static const ps_vjson_field count_fields[] = {
    {"records_in", offsetof(ps_vpaired, records_in), PS_VJSON_U64},
    {"kept", offsetof(ps_vpaired, kept), PS_VJSON_U64},
    {"rejected", offsetof(ps_vpaired, rejected), PS_VJSON_U64},
    {"duplicates", offsetof(ps_vpaired, duplicates), PS_VJSON_U64},
    {"unparsed", offsetof(ps_vpaired, unparsed), PS_VJSON_U64},
    {"unlabeled", offsetof(ps_vpaired, unlabeled), PS_VJSON_U64},
    {"empty_after_cleaning", offsetof(ps_vpaired, empty_after_cleaning), PS_VJSON_U64},
    {"changed_question", offsetof(ps_vpaired, changed_question), PS_VJSON_U64},
    {"changed_sql", offsetof(ps_vpaired, changed_sql), PS_VJSON_U64},
};

static const ps_vjson_field label_fields[] = {
    {"records_in", offsetof(ps_vpaired_label, records_in), PS_VJSON_U64},
    {"kept", offsetof(ps_vpaired_label, kept), PS_VJSON_U64},
    {"rejected", offsetof(ps_vpaired_label, rejected), PS_VJSON_U64},
    {"duplicates", offsetof(ps_vpaired_label, duplicates), PS_VJSON_U64},
    {"empty_after_cleaning", offsetof(ps_vpaired_label, empty_after_cleaning), PS_VJSON_U64},
};

/* The outcome totals and whether they fit records_in. */
static int counts_from_json(json_t *j, ps_vpaired *p, const char *ctx, ps_error *err)
{
    int rc = ps_vjson_fields(j, p, count_fields, NFIELDS(count_fields), ctx, err);
    if (rc)
        return rc;
    if (p->kept > p->records_in || p->rejected > p->records_in || p->duplicates > p->records_in ||
        p->unparsed > p->records_in || p->unlabeled > p->records_in ||
        p->empty_after_cleaning > p->rejected || p->changed_question > p->kept ||
        p->changed_sql > p->kept)
        return ps_error_set(err, PS_EFORMAT, "%s: counts out of range", ctx);
    return 0;
}

/* rejected_by: [{reason, rule?, count}], summing to the rejected total. */
static int reasons_from_json(json_t *ra, ps_vpaired *p, const char *ctx, ps_error *err)
{
    int rc;
    if (!json_is_array(ra))
        return ps_error_set(err, PS_EFORMAT, "%s: 'rejected_by' must be an array", ctx);
    size_t i;
    json_t *e;
    uint64_t rsum = 0;
    json_array_foreach(ra, i, e)
    {
        bool ok = json_is_object(e);
        const char *reason = json_string_value(json_object_get(e, "reason"));
        const char *rule = ok ? ps_vjson_opt_str(e, "rule", &ok) : NULL;
        uint64_t c;
        if (!ok || !reason)
            return ps_error_set(err, PS_EFORMAT, "%s: rejected_by entry %zu needs a string 'reason'",
                                ctx, i);
        if ((rc = ps_vjson_u64(e, "count", &c, ctx, err)))
            return rc;
        if (__builtin_add_overflow(rsum, c, &rsum))
            return ps_error_set(err, PS_EFORMAT, "%s: rejected_by counts overflow", ctx);
        if (add_reason(p, reason, rule, c))
            return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    if (rsum != p->rejected)
        return ps_error_set(err, PS_EFORMAT, "%s: rejected_by sums to %llu, rejected is %llu", ctx,
                            (unsigned long long)rsum, (unsigned long long)p->rejected);
    return 0;
}

/* change.{question,sql}: zero, shrink, grow and relative histograms. */
static int change_from_json(json_t *ch, ps_vpaired *p, const char *ctx, ps_error *err)
{
    int rc;
    if (!json_is_object(ch))
        return ps_error_set(err, PS_EFORMAT, "%s: 'change' must be an object", ctx);
    for (int f = 0; f < 2; f++) {
        json_t *c = json_object_get(ch, ps_vfield_names[f]);
        uint64_t ts, tg, tr;
        if (!json_is_object(c))
            return ps_error_set(err, PS_EFORMAT, "%s: change.%s must be an object", ctx,
                                ps_vfield_names[f]);
        if ((rc = ps_vjson_u64(c, "zero", &p->zero[f], ctx, err)))
            return rc;
        if ((rc = ps_vjson_hist(json_object_get(c, "shrink"), p->shrink[f], PS_VBINS, &ts, ctx, err)) ||
            (rc = ps_vjson_hist(json_object_get(c, "grow"), p->grow[f], PS_VBINS, &tg, ctx, err)) ||
            (rc = ps_vjson_hist(json_object_get(c, "relative"), p->rel[f], PS_VREL_BINS, &tr, ctx, err)))
            return rc;
        if (p->shrink[f][0] || p->grow[f][0])
            return ps_error_set(err, PS_EFORMAT, "%s: change.%s: a change of 0 in shrink or grow",
                                ctx, ps_vfield_names[f]);
        if (p->zero[f] + ts + tg != tr || tr > p->kept)
            return ps_error_set(err, PS_EFORMAT, "%s: change.%s counts disagree", ctx,
                                ps_vfield_names[f]);
    }
    return 0;
}

/* One entry of 'labels': its outcome counts and relative changes. */
static int label_from_json(json_t *e, size_t i, const char *prev, ps_vpaired *p,
                           uint64_t *records_in_sum, const char *ctx, ps_error *err)
{
    const char *name;
    int rc = ps_vjson_label_entry(e, i, prev, 100, &name, ctx, err);
    if (rc)
        return rc;
    ps_vpaired_label *l = get_label(p, name, 0);
    if (!l)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    if ((rc = ps_vjson_fields(e, l, label_fields, NFIELDS(label_fields), ctx, err)))
        return rc;
    if (l->kept > l->records_in || l->rejected > l->records_in ||
        l->duplicates > l->records_in || l->empty_after_cleaning > l->rejected)
        return ps_error_set(err, PS_EFORMAT, "%s: label '%.100s': counts out of range", ctx, name);
    json_t *rel = json_object_get(e, "relative");
    for (int f = 0; f < 2; f++) {
        uint64_t t;
        if ((rc = ps_vjson_hist(json_object_get(rel, ps_vfield_names[f]), l->rel[f], PS_VREL_BINS,
                                &t, ctx, err)))
            return rc;
        if (t > l->kept)
            return ps_error_set(err, PS_EFORMAT,
                                "%s: label '%.100s': relative change counts exceed kept", ctx, name);
    }
    if (__builtin_add_overflow(*records_in_sum, l->records_in, records_in_sum))
        return ps_error_set(err, PS_EFORMAT, "%s: label counts overflow", ctx);
    return 0;
}

/* 'labels', sorted by name, and whether they fit the totals. */
static int labels_from_json(json_t *la, ps_vpaired *p, const char *ctx, ps_error *err)
{
    int rc;
    if (!json_is_array(la))
        return ps_error_set(err, PS_EFORMAT, "%s: 'labels' must be an array", ctx);
    const char *prev = NULL;
    uint64_t records_in_sum = 0;
    size_t i;
    json_t *e;
    json_array_foreach(la, i, e)
    {
        if ((rc = label_from_json(e, i, prev, p, &records_in_sum, ctx, err)))
            return rc;
        prev = json_string_value(json_object_get(e, "label"));
    }
    if (records_in_sum + p->unlabeled != p->records_in)
        return ps_error_set(err, PS_EFORMAT, "%s: label records_in + unlabeled != records_in", ctx);
    uint64_t kept = 0, rejected = 0, duplicates = 0, empty = 0;
    for (size_t k = 0; k < p->nlabels; k++) { /* each <= its records_in: sums cannot overflow */
        kept += p->labels[k].kept;
        rejected += p->labels[k].rejected;
        duplicates += p->labels[k].duplicates;
        empty += p->labels[k].empty_after_cleaning;
    }
    if (kept > p->kept || rejected > p->rejected || duplicates > p->duplicates ||
        empty > p->empty_after_cleaning)
        return ps_error_set(err, PS_EFORMAT, "%s: the labels' counts exceed the totals", ctx);
    return 0;
}

/* One entry of 'examples' into x (its strings owned by x, also on failure). */
static int example_from_json(json_t *e, size_t i, ps_vexample *x, const char *ctx, ps_error *err)
{
    bool ok = json_is_object(e);
    json_t *sc = json_object_get(e, "relative_change"), *dq = json_object_get(e, "question_delta"),
           *ds = json_object_get(e, "sql_delta"), *sq = json_object_get(e, "seq");
    const char *oc = json_string_value(json_object_get(e, "outcome"));
    const char *t[4] = {json_string_value(json_object_get(e, "question_before")),
                        json_string_value(json_object_get(e, "question_after")),
                        json_string_value(json_object_get(e, "sql_before")),
                        json_string_value(json_object_get(e, "sql_after"))};
    const char *id = ok ? ps_vjson_opt_str(e, "id", &ok) : NULL,
               *src = ok ? ps_vjson_opt_str(e, "source", &ok) : NULL,
               *lab = ok ? ps_vjson_opt_str(e, "label", &ok) : NULL,
               *rea = ok ? ps_vjson_opt_str(e, "reason", &ok) : NULL,
               *rul = ok ? ps_vjson_opt_str(e, "rule", &ok) : NULL;
    if (!ok || !json_is_number(sc) || !json_is_integer(dq) || !json_is_integer(ds) ||
        !json_is_integer(sq) || json_integer_value(sq) < 0 || !oc || !t[0] || !t[1] || !t[2] ||
        !t[3] || (strcmp(oc, "kept") && strcmp(oc, "rejected") && strcmp(oc, "duplicate")))
        return ps_error_set(err, PS_EFORMAT, "%s: example %zu is malformed", ctx, i);
    x->score = json_number_value(sc);
    if (!(x->score >= 0) || !isfinite(x->score))
        return ps_error_set(err, PS_EFORMAT, "%s: example %zu: relative_change out of range", ctx, i);
    x->dq = json_integer_value(dq);
    x->ds = json_integer_value(ds);
    x->seq = (uint64_t)json_integer_value(sq);
    x->id = ps_strdup_opt(id);
    x->source = ps_strdup_opt(src);
    x->label = ps_strdup_opt(lab);
    x->reason = ps_strdup_opt(rea);
    x->rule = ps_strdup_opt(rul);
    x->outcome = strdup(oc);
    x->q_before = dup_prefix(t[0], strlen(t[0]));
    x->q_after = dup_prefix(t[1], strlen(t[1]));
    x->s_before = dup_prefix(t[2], strlen(t[2]));
    x->s_after = dup_prefix(t[3], strlen(t[3]));
    if (!x->outcome || !x->q_before || !x->q_after || !x->s_before || !x->s_after)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    return 0;
}

static int examples_from_json(json_t *ea, ps_vpaired *p, const char *ctx, ps_error *err)
{
    if (!json_is_array(ea) || json_array_size(ea) > p->max_examples)
        return ps_error_set(err, PS_EFORMAT, "%s: 'examples' must be an array of at most max_examples",
                            ctx);
    size_t i;
    json_t *e;
    json_array_foreach(ea, i, e)
    {
        ps_vexample x = {0};
        int rc = example_from_json(e, i, &x, ctx, err);
        if (rc) {
            ex_free(&x);
            return rc;
        }
        ex_offer(p, &x);
    }
    return 0;
}

int ps_vpaired_from_json(json_t *j, ps_vpaired **out, ps_error *err)
{
    *out = NULL;
    const char *ctx = "paired statistics";
    int rc;
    if (!json_is_object(j))
        return ps_error_set(err, PS_EFORMAT, "%s: must be a JSON object", ctx);
    uint64_t maxex;
    if ((rc = ps_vjson_u64(j, "max_examples", &maxex, ctx, err)))
        return rc;
    if (maxex > MAX_EXAMPLES_LIMIT)
        return ps_error_set(err, PS_EFORMAT, "%s: max_examples over %d", ctx, MAX_EXAMPLES_LIMIT);
    ps_vpaired *p = ps_vpaired_new((size_t)maxex);
    if (!p)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    if ((rc = counts_from_json(j, p, ctx, err)) ||
        (rc = reasons_from_json(json_object_get(j, "rejected_by"), p, ctx, err)) ||
        (rc = ps_vrejections_from_json(p, json_object_get(j, "rejected_by_input"), ctx, err)) ||
        (rc = ps_vid_collisions_from_json(p, json_object_get(j, "id_collisions"), ctx, err)) ||
        (rc = change_from_json(json_object_get(j, "change"), p, ctx, err)) ||
        (rc = labels_from_json(json_object_get(j, "labels"), p, ctx, err)) ||
        (rc = examples_from_json(json_object_get(j, "examples"), p, ctx, err)))
        goto fail;
    p->seq = p->records_in; /* a whole build's: every record was added in order */
    *out = p;
    return 0;
fail:
    ps_vpaired_free(p);
    return rc;
}
