/* pipeline/preprocess_priv.h — between preprocess_open.c, preprocess.c and
 * preprocess_pool.c. */
#ifndef PS_PIPELINE_PREPROCESS_PRIV_H
#define PS_PIPELINE_PREPROCESS_PRIV_H

#include "pairshard/preprocess.h"
#include "pipeline/preprocess_int.h"

#include <pthread.h>

/* Everything one ps_preprocess or ps_preprocessor_clean call writes: the
 * cleaner's worker, the tokenizer's scratch, the encoder's buffers and the
 * output's. What a call returns points into its slot, so a thread keeps
 * its slot (thread-specific data) until its next call, until it gives it
 * back (ps_preprocessor_release) or until it ends; then the slot goes back
 * to the pool for the next thread. */
typedef struct ps_pp_slot {
    struct ps_preprocessor *p;
    struct ps_pp_slot *next_free;  /* the pool's free list */
    struct ps_pp_slot *next_all;   /* every slot, for ps_preprocessor_free */
    ps_clean_worker *w;
    ps_tok_scratch *ts;
    ps_encode_ctx x;
    ps_buf record;            /* a record given as fields, as JSON */
    ps_buf mask;              /* attention mask: ones */
} ps_pp_slot;

struct ps_preprocessor {
    char *dir;
    ps_build_config cfg;      /* tokenizer, template, schemas, max_length */
    ps_tokenizer *tok;
    ps_template *tmpl;
    ps_schemas *schemas;
    ps_cleaner *cleaner;
    ps_input_ctx in;          /* a JSONL input of one record */
    /* the names the cleaner reads, for records given as fields */
    char *question_key, *sql_key, *db_key;
    /* a set built from dialogues (--turns): where a dialogue keeps its
     * turns, and the names of a turn's question and SQL; NULL otherwise */
    char *turns_path, *turn_q_key, *turn_sql_key;
    char *strings;            /* owns the option strings of cfg.clean */
    int32_t pad_id;
    char warning[1024];       /* ps_preprocessor_get_warning; "" for none */
    /* the pool of slots (preprocess_pool.c); everything above is only
     * read once open returns */
    pthread_mutex_t pool_mu;
    pthread_key_t slot_key;   /* the calling thread's slot */
    bool pool_ready;
    ps_pp_slot *free_slots, *all_slots;
    size_t n_slots;
};

/* preprocess_unicode.c */
/* Compares the Unicode versions the set recorded (manifest member
 * "unicode", or for an older set its "libraries") with this host's and
 * with those the tables assume, for the libraries p->tok depends on: 0,
 * or PS_EVERSION naming the library and both versions; with `allow`, 0 and
 * the same sentence in p->warning. */
int ps_pp_unicode_check(ps_preprocessor *p, json_t *m, bool allow, ps_error *err);
/* The caller's options (NULL: the defaults) at this library's size into
 * *o: 0 or PS_EINVAL (a struct_size no version had). */
int ps_pp_options_adopt(ps_preprocess_options *o, const ps_preprocess_options *opt,
                        ps_error *err);

/* preprocess_pool.c */
/* Sets up the pool (no slot yet). 0 or PS_ENOMEM (no thread key left). */
int ps_pp_pool_init(ps_preprocessor *p, ps_error *err);
/* Frees every slot, given back or not, and the pool. */
void ps_pp_pool_free(ps_preprocessor *p);
/* The calling thread's slot: the one it holds, else one from the pool,
 * else a new one. NULL (PS_ENOMEM in err) when out of memory. */
ps_pp_slot *ps_pp_slot_take(ps_preprocessor *p, ps_error *err);
/* How many slots the pool has made (held or free): for tests. */
size_t ps_pp_pool_slots(ps_preprocessor *p);

#endif
