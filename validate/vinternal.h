/*
 * validate/vinternal.h — the layouts of ps_vstats and ps_vpaired, shared by
 * stats.c, paired.c and checks.c only (not part of validate.h's contract).
 */
#ifndef PS_VALIDATE_VINTERNAL_H
#define PS_VALIDATE_VINTERNAL_H

#include "validate/stat_math.h"
#include "common/strmap.h"
#include "validate/validate.h"

/* Length fields of one group of records (all, or one label). */
enum { PS_VF_QUESTION = 0, PS_VF_SQL = 1, PS_VF_TOKENS = 2, PS_VF_N = 3 };
extern const char *const ps_vfield_names[PS_VF_N]; /* question_chars, sql_chars, tokens */

typedef struct ps_vdist {
    uint64_t n[PS_VF_N];   /* records counted in each field's histogram */
    uint64_t sum[PS_VF_N];
    uint32_t max[PS_VF_N];
    uint64_t hist[PS_VF_N][PS_VBINS];
} ps_vdist;

/* Hardness levels a statistics object tells apart (hard_stats.c); a name
 * past the room is counted in the last level, "other". */
#define PS_VHARD_LEVELS 16u

typedef struct ps_vlabel {
    char *name;
    uint64_t records;
    ps_vdist d;
    uint64_t hard[PS_VHARD_LEVELS]; /* records per level of the stats' hlevels */
} ps_vlabel;

/* A statistics file with more labels is refused (each costs ~9 KiB). */
#define PS_VSTATS_MAX_LABELS 200000u

/* Exact token-length counts kept for the padding rate (overall only). */
#define PS_VTOK_EXACT 1024u

/* The words that became [UNK], per field: a space-saving heavy-hitters
 * table (Metwally et al.) of at most PS_VUNK_CAP words. While it has room
 * the counts are exact; a new word then replaces the least counted one
 * (ties: the largest word in byte order, so the choice depends on the
 * table's contents, not its order) and inherits its count as `error`, an
 * upper bound of how much `count` overstates. Words are added in input
 * order and tables merged in part order: same input, same table. */
#define PS_VUNK_CAP 256u
#define PS_VUNK_TOP 20u      /* words shown in reports */
#define PS_VUNK_WORD_MAX 64u /* bytes of a word kept (longer: cut at a character) */
enum { PS_VUNK_QUESTION = 0, PS_VUNK_SQL = 1, PS_VUNK_FIELDS = 2 };
extern const char *const ps_vunk_field_names[PS_VUNK_FIELDS]; /* question, sql */

typedef struct ps_vunk_word {
    char *word, *example; /* example: the id of the first record seen with it */
    uint64_t count, error;
    int hint;             /* PS_UNK_HINT_* */
} ps_vunk_word;

typedef struct ps_vunk {
    ps_vunk_word w[PS_VUNK_CAP];
    size_t n;
    uint16_t slot[2 * PS_VUNK_CAP]; /* open addressing: index + 1, 0 empty */
    uint64_t total;                 /* every [UNK] word seen, tracked or not */
} ps_vunk;

void ps_vunk_clear(ps_vunk *u);
/* Counts `count` more of `word` (error: its inherited overstatement). */
int ps_vunk_add(ps_vunk *u, const char *word, size_t len, uint64_t count, uint64_t error,
                const char *example, int hint);
int ps_vunk_merge(ps_vunk *into, const ps_vunk *from);
/* Entry indices by count (descending), then word (malloc'ed; NULL when
 * out of memory or empty). */
size_t *ps_vunk_sorted(const ps_vunk *u);
/* {"question": {...}, "sql": {...}} for stats.json (every tracked word),
 * and back (untrusted). */
json_t *ps_vunk_to_json(const ps_vunk u[PS_VUNK_FIELDS], size_t top);
int ps_vunk_from_json(json_t *j, ps_vunk u[PS_VUNK_FIELDS], ps_error *err);
/* The details the [UNK] checks carry: the top words per field and the
 * hints that apply ({"question": ..., "sql": ..., "hints": [...]}). */
json_t *ps_vunk_details(const ps_vunk u[PS_VUNK_FIELDS]);
/* Appends the words and hints of such details to a terminal summary. */
int ps_vunk_summary(ps_buf *b, json_t *unk_words);

struct ps_vstats {
    char point[16];
    uint64_t records, unparsed, unlabeled;
    uint64_t empty_question, empty_sql, changed, invalid_utf8;
    uint64_t records_with_controls, controls_removed;
    uint64_t records_with_tokens, tokens, unk_tokens, records_with_unk, truncated;
    ps_vdist all;
    uint64_t tok_exact[PS_VTOK_EXACT];
    ps_vlabel *labels; /* unsorted; insertion order; names owned by `names` */
    size_t nlabels, cap;
    ps_strmap names;   /* label -> index into labels */
    uint32_t *bounds;  /* padding bucket bounds (ps_vstats_set_padding) */
    size_t nbounds;
    ps_vunk *unk;      /* [PS_VUNK_FIELDS], allocated with the first [UNK] word */
    char *hlevels[PS_VHARD_LEVELS]; /* hardness level names, in the order first seen */
    size_t nhlevels;                /* 0: no record had a hardness (JSON leaves it out) */
    uint64_t hard[PS_VHARD_LEVELS]; /* records per level */
};

/* hard_stats.c: records per hardness level. Adds one record of `level`
 * to s and to its label l (NULL: unlabeled). 0 or PS_ENOMEM. */
int ps_vhard_add(ps_vstats *s, ps_vlabel *l, const char *level);
/* Adds from's counts src (from->hard or a label's) into into's dst
 * (into->hard or the same label's), level by name. 0 or PS_ENOMEM. */
int ps_vhard_merge(ps_vstats *into, uint64_t *dst, const ps_vstats *from, const uint64_t *src);
void ps_vhard_free(ps_vstats *s);
/* The levels' indices in report order (known classes by difficulty, then
 * by name); returns their number. */
size_t ps_vhard_order(const ps_vstats *s, size_t ix[PS_VHARD_LEVELS]);
/* {"easy": N, ...}: `counts` (s->hard or a label's) in report order. */
json_t *ps_vhard_to_json(const ps_vstats *s, const uint64_t *counts);
/* Reads such an object (o NULL: absent, nothing read) into counts (s->hard
 * first, then a label's: a label's level must be within the overall
 * count); the counts must add up to at most `records`. */
int ps_vhard_from_json(json_t *o, ps_vstats *s, uint64_t *counts, uint64_t records,
                       const char *ctx, ps_error *err);

/* The label's entry, or NULL. */
const ps_vlabel *ps_vstats_find_label(const ps_vstats *s, const char *name);
/* Label indices sorted by name (malloc'ed; NULL when out of memory or none). */
size_t *ps_vstats_sorted_labels(const ps_vstats *s);
/* Padding of the tokenized records under s->bounds: *padded = sum of each
 * record's bucket bound (its own length past the last bound). Returns false
 * without bounds or tokens. */
bool ps_vstats_padding(const ps_vstats *s, uint64_t *padded, uint64_t *tokens);

/* Relative length change bins: floor(100 |after - before| / max(before, 1)),
 * capped at 100 (>= 100%). */
#define PS_VREL_BINS 101u

typedef struct ps_vpaired_label {
    char *name;
    uint64_t records_in, kept, rejected, duplicates, empty_after_cleaning;
    uint64_t rel[2][PS_VREL_BINS]; /* kept: question, sql */
} ps_vpaired_label;

typedef struct ps_vreason {
    char *reason, *rule; /* rule may be NULL */
    uint64_t count;
} ps_vreason;

/* Rejections of one input for one reason (and rule), with the first
 * example (rejections.c). */
typedef struct ps_vinput_reason {
    char *input, *reason, *rule; /* rule may be NULL */
    uint64_t count;
    char *source, *detail;       /* the first such record; may be NULL */
} ps_vinput_reason;

#define PS_VID_EXAMPLES 5

typedef struct ps_vexample {
    double score;  /* the larger relative change of question and sql */
    uint64_t seq;  /* input order */
    char *id, *source, *label, *outcome, *reason, *rule;
    char *q_before, *q_after, *s_before, *s_after;
    int64_t dq, ds; /* chars after - before */
} ps_vexample;

struct ps_vpaired {
    uint64_t records_in, kept, rejected, duplicates, unparsed, unlabeled;
    uint64_t seq; /* records given to ps_vpaired_add_ordered: the examples' order */
    uint64_t empty_after_cleaning, changed_question, changed_sql;
    /* change (after - before, chars) of kept records: == 0, and |change| in
     * the fixed bins for shrink (< 0) and grow (> 0) */
    uint64_t zero[2];
    uint64_t shrink[2][PS_VBINS], grow[2][PS_VBINS];
    uint64_t rel[2][PS_VREL_BINS];
    ps_vpaired_label *labels; /* names owned by `names` */
    size_t nlabels, cap;
    ps_strmap names;
    ps_vreason *reasons;
    size_t nreasons, rcap;
    ps_vexample *ex;
    size_t nex, max_examples;
    ps_vinput_reason *inr;   /* rejections per input, in input order */
    size_t ninr, inrcap, last_inr;
    uint64_t id_collisions;  /* kept records whose id an earlier kept one has */
    char *id_examples[PS_VID_EXAMPLES];
    size_t nid_examples;
};

/* rejections.c: paired.rejected_by_input */
int ps_vrejections_add(ps_vpaired *p, const char *input, const char *reason, const char *rule,
                       uint64_t count, const char *source, const char *detail);
void ps_vrejections_free(ps_vpaired *p);
int ps_vrejections_merge(ps_vpaired *into, const ps_vpaired *from);
/* The first input's entry for (reason, rule), or NULL. */
const ps_vinput_reason *ps_vrejections_example(const ps_vpaired *p, const char *reason,
                                               const char *rule);
json_t *ps_vrejections_to_json(const ps_vpaired *p);
/* Reads what ps_vrejections_to_json wrote; `a` NULL (absent) is fine. */
int ps_vrejections_from_json(ps_vpaired *p, json_t *a, const char *ctx, ps_error *err);
/* rejections.c: paired.id_collisions ({count, examples}); `id` NULL adds
 * to the count only. */
int ps_vid_collisions_add(ps_vpaired *p, const char *id, uint64_t count);
void ps_vid_collisions_free(ps_vpaired *p);
int ps_vid_collisions_merge(ps_vpaired *into, const ps_vpaired *from);
json_t *ps_vid_collisions_to_json(const ps_vpaired *p);
int ps_vid_collisions_from_json(ps_vpaired *p, json_t *o, const char *ctx, ps_error *err);

const ps_vpaired_label *ps_vpaired_find_label(const ps_vpaired *p, const char *name);

/* One check's outcome in a report. */
enum { PS_VV_PASS = 0, PS_VV_WARN, PS_VV_FAIL, PS_VV_NOT_ENOUGH_DATA, PS_VV_OFF, PS_VV_N };
extern const char *const ps_vverdict_names[PS_VV_N];

typedef struct ps_vcheck {
    const char *name, *group, *metric, *op, *mode;
    char *compares;
    double value, threshold, warn_threshold, p_value; /* NAN: none (null) */
    int verdict;
    char *explanation;
    json_t *details; /* object, owned */
} ps_vcheck;

struct ps_vreport {
    const char *mode;  /* "build" or "compare" */
    int verdict;       /* PS_VV_PASS, _WARN or _FAIL */
    ps_vcheck *checks;
    size_t n, cap;
    json_t *points;    /* owned: {"raw": ..., ...} or {"baseline": ..., "current": ...} */
    json_t *paired;    /* owned or NULL */
    json_t *sql;       /* owned or NULL: SQL checked against its schema (ps_validate_sql) */
    json_t *config;    /* owned: {"thresholds": {...}, "modes": {...}} */
    json_t *vocab_warnings; /* owned or NULL: the tokenizer's load warnings */
    json_t *serving;   /* owned or NULL: cleaning changed a large share (build_run.c) */
    json_t *generation; /* owned or NULL: prompt and completion lengths (causal, seq2seq) */
    json_t *leakage;    /* owned or NULL: the leakage check's object (--holdout) */
    json_t *sources;   /* owned or NULL: a mixture's sources (checks_sources.c) */
    double threaded_seconds; /* not in the report: ps_vreport_threaded_seconds */
    size_t threads;          /* the config's: its texts' labels are dumped on as many */
};

/* JSON helpers shared by the loaders. */
int ps_vjson_u64(json_t *o, const char *key, uint64_t *out, const char *ctx, ps_error *err);
/* An optional string member: its value, or NULL when absent or null; sets
 * *ok false (and leaves it alone otherwise) when it is another type. */
const char *ps_vjson_opt_str(json_t *o, const char *key, bool *ok);

/* The loaders read a struct's counters from a table, one row per member, so
 * that a member added to the struct is one row here and in its writer. */
typedef enum ps_vjson_type {
    PS_VJSON_U64, /* a non-negative integer into a uint64_t */
} ps_vjson_type;
typedef struct ps_vjson_field {
    const char *key;    /* the JSON member */
    size_t offset;      /* offsetof the struct member */
    ps_vjson_type type;
} ps_vjson_field;
/* Reads each row's member of object o into base + offset, in table order;
 * the first missing or mistyped one fails with its key named (PS_EFORMAT). */
int ps_vjson_fields(json_t *o, void *base, const ps_vjson_field *t, size_t n, const char *ctx,
                    ps_error *err);
/* A sparse histogram [[bin, count], ...] (strictly increasing bins < nbins,
 * counts >= 1) into h (zeroed first); *total gets the count sum. */
int ps_vjson_hist(json_t *a, uint64_t *h, size_t nbins, uint64_t *total, const char *ctx,
                  ps_error *err);
/* Entry i of a 'labels' array: an object with a string 'label' sorting
 * after `prev` (NULL for the first); *name gets it. Messages name at most
 * name_cap bytes of it. 0 or PS_EFORMAT. */
int ps_vjson_label_entry(json_t *e, size_t i, const char *prev, int name_cap, const char **name,
                         const char *ctx, ps_error *err);
/* h's nonzero bins as [[bin, count], ...] (a new reference, NULL when
 * out of memory). With a cache (ps_vjson_cache_new; NULL: none) equal
 * pairs are one shared value, which nobody may modify; free the cache
 * whenever (the histograms keep their own references). */
typedef struct ps_vjson_cache ps_vjson_cache;
ps_vjson_cache *ps_vjson_cache_new(void);
void ps_vjson_cache_free(ps_vjson_cache *c);
json_t *ps_vjson_hist_cached(ps_vjson_cache *c, const uint64_t *h, size_t nbins);
json_t *ps_vjson_hist_new(const uint64_t *h, size_t nbins);
json_t *ps_vjson_uint(uint64_t v);

#endif
