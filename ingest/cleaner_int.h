/*
 * ingest/cleaner_int.h — the cleaner's and its workers' state, shared by
 * cleaner.c, turns.c (dialogues) and text2sql.c (schemas and templates).
 */
#ifndef PS_INGEST_CLEANER_INT_H
#define PS_INGEST_CLEANER_INT_H

#include "common/strmap.h"
#include "ingest/fields.h"
#include "ingest/ingest.h"
#include "schema/schema.h"

#include <jansson.h>

/* dedupe_parts.c: the cleaner's duplicate table, one part (at
 * ps_cleaner_create). 0 or PS_ENOMEM. */
int ps_dedupe_parts_init(ps_cleaner *c);
/* dedupe_parts.c: frees the parts (at ps_cleaner_free). */
void ps_dedupe_parts_free(ps_cleaner *c);
/* dedupe_parts.c: the reading thread's estimate of `n` more committed
 * records, shared among the parts (a hint). */
void ps_dedupe_parts_expect(ps_cleaner *c, size_t n);

struct ps_cleaner {
    ps_clean_options opts;
    ps_field_names names;
    char *name_store[4], *shown_store[4];
    ps_rules *rules;
    ps_dedupe *ids;            /* ids of kept records, for collisions */
    /* The duplicate table in parts by hash (dedupe_parts.c): one, which
     * the commit looks up, until `split` makes one a thread, each looked
     * up by one thread at a time, in input order. The reading thread adds
     * what each part should expect to part_target (atomically: a part's
     * thread reserves room when it sees it grow). */
    struct ps_dedupe_part *parts;
    size_t n_parts;
    bool split;
    size_t part_target;
    size_t expect_share;       /* 1 in this many records is committed (0: 1) */
    ps_stats *stats;
    ps_named_inputs *named;
    ps_strmap bases;           /* base names of the inputs declared or opened */
    char **base_path;          /* bases.keys[i] -> the first path with it */
    bool *base_clash;          /* two declared paths share bases.keys[i] */
    ps_clean_worker *worker; /* for ps_cleaner_run, made on first use */
    /* text-to-SQL inputs (text2sql.c, turns.c) */
    const ps_schemas *schemas;   /* borrowed; NULL: none */
    const ps_template *tmpl;     /* borrowed; NULL: none */
    ps_field_spec db_spec;       /* opts.db_field, into names.db once needed */
    ps_field_spec turn_q, turn_sql; /* a turn's question and sql members */
    char *db_store, *db_shown, *turn_store[2], *turns_path;
    bool read_db;                /* ps_cleaner_read_database: db_id without schemas */
    ps_clean_check_fn check;     /* ps_cleaner_set_check; NULL: none */
    void *check_user;
    void (*check_free)(void *);
    /* A mixture (ps_cleaner_add_source): a source's cleaner has its own
     * options, schemas and template and accounting; the owner commits
     * (dedupe across sources, the overall accounting) and its input
     * counts (bytes, blank lines, dialogues) are the owner's too. */
    struct ps_cleaner *owner;   /* a source's: the cleaner that commits; else NULL */
    char *id_prefix;            /* a source's: "<name>/" before every record id */
    size_t id_prefix_len;
    struct ps_cleaner **sources; /* the owner's: its sources, owned */
    size_t n_sources;
    bool sources_sql;           /* the owner's: some source checks SQL (accounting) */
    char *difficulty_store, *difficulty_shown; /* ps_cleaner_set_difficulty_field */
};

/* A worker's text-to-SQL state (text2sql.c, turns.c). */
typedef struct ps_t2s_worker {
    /* the dialogue the last turn came from, parsed once for all its turns */
    json_t *dlg_root;
    ps_buf dlg_bytes;
    /* the cleaned history (earlier utterances, most recent first) and
     * template fields */
    ps_buf *hist;
    const char **hist_ptr;
    size_t *hist_len, n_hist, hist_cap;
    ps_buf extra[PS_EXTRA_FIELDS];
    const char *extra_ptr[PS_EXTRA_FIELDS];
    size_t extra_len[PS_EXTRA_FIELDS];
    ps_buf db, prompt, completion, hashed;
    ps_sql_checker *checker; /* made on first use */
    char raw_msg[256], clean_msg[256], exec_msg[256];
} ps_t2s_worker;

/* Per-thread state: everything a record's cleaning writes. */
struct ps_clean_worker {
    const ps_cleaner *c;
    ps_buf fixed;  /* the raw record after UTF-8 repair */
    ps_buf q, s;   /* cleaned fields */
    ps_buf tmp;    /* scratch for the cleaning steps */
    ps_buf source, id;
    unsigned char *touched; /* per-rule flags for the current record */
    size_t touched_cap;
    void *match_data;
    ps_fields fields;
    ps_csv_row row;
    ps_buf keys;   /* a record's keys, for the named-field check */
    char detail[600];
    ps_t2s_worker t2s;
    void *check_scratch;   /* the cleaner's check's, this worker's */
};


/* cleaner.c: one field through the cleaning steps (field PS_FIELD_*). */
int ps_clean_field(ps_clean_worker *w, int field, const char *in, size_t n, ps_buf *out,
                   ps_field_result *fr, ps_rules_outcome *ro, ps_error *err);

/* text2sql.c */
/* Whether records need the text-to-SQL step (schemas or a template). */
bool ps_t2s_active(const ps_cleaner *c);
/* After question and sql are cleaned and the record is to be kept: reads
 * the database, looks its schema up, cleans the template fields and the
 * history, compiles raw and cleaned SQL, executes, renders, and rehashes
 * for dedupe. It may turn the item into a rejection. 0 or a negative code. */
int ps_t2s_record(ps_clean_worker *w, const ps_raw_record *rec, ps_clean_item *it,
                  ps_error *err);
void ps_t2s_worker_free(ps_t2s_worker *t);
/* Sets up the db and turn field names (at create). 0, PS_EINVAL, PS_ENOMEM. */
int ps_t2s_names(ps_cleaner *c);
void ps_t2s_names_free(ps_cleaner *c);
/* Rejects the item for `reason`, w->detail saying why. Returns 1. */
int ps_t2s_reject(ps_clean_worker *w, ps_clean_item *it, const char *reason);
/* Cleans a question-like text (a template field, an earlier turn) into
 * *out, as the question is cleaned. When a rule drops it or fails, the
 * item is rejected (dropped_by_rule, rule_error) with w->detail
 * "<what>: <the rule's detail>". 0, 1 (rejected), or a negative code. */
int ps_t2s_clean_text(ps_clean_worker *w, ps_clean_item *it, const char *text, size_t len,
                      ps_buf *out, const char *what, ps_error *err);

/* cleaner.c: the next raw record of the input, as the reader splits it
 * (ps_input_next without dialogues). */
int ps_input_next_record(ps_cleaner *c, ps_input_ctx *in, ps_raw_record *rec, ps_error *err);

/* turns.c */
/* ps_input_next for dialogues: one record per turn (rec->turn), the
 * dialogue's bytes each time; a dialogue without turns is one record
 * carrying its rejection. */
int ps_turns_next(ps_cleaner *c, ps_input_ctx *in, ps_raw_record *rec, ps_error *err);
/* The fields of turn rec->turn of the dialogue in data[0..len) (parsed
 * once per dialogue and cached in the worker). 0, 1 (f->reason set), or
 * PS_ENOMEM. */
int ps_turn_fields(ps_clean_worker *w, const ps_raw_record *rec, const char *data, size_t len);
/* The cleaned utterances of the turns before rec->turn, most recent first,
 * into w->t2s.hist*. 0, 1 (rejected: it->res set), or a negative code. */
int ps_turn_history(ps_clean_worker *w, const ps_raw_record *rec, ps_clean_item *it,
                    ps_error *err);

#endif
