/* pipeline/preprocess_priv.h — between preprocess_open.c and preprocess.c. */
#ifndef PS_PIPELINE_PREPROCESS_PRIV_H
#define PS_PIPELINE_PREPROCESS_PRIV_H

#include "pairshard/preprocess.h"
#include "pipeline/preprocess_int.h"

struct ps_preprocessor {
    char *dir;
    ps_build_config cfg;      /* tokenizer, template, schemas, max_length */
    ps_tokenizer *tok;
    ps_template *tmpl;
    ps_schemas *schemas;
    ps_cleaner *cleaner;
    ps_clean_worker *w;
    ps_tok_scratch *ts;
    ps_encode_ctx x;
    ps_input_ctx in;          /* a JSONL input of one record */
    /* the names the cleaner reads, for records given as fields */
    char *question_key, *sql_key, *db_key;
    /* a set built from dialogues (--turns): where a dialogue keeps its
     * turns, and the names of a turn's question and SQL; NULL otherwise */
    char *turns_path, *turn_q_key, *turn_sql_key;
    char *strings;            /* owns the option strings of cfg.clean */
    ps_buf record;            /* a record given as fields, as JSON */
    ps_buf mask;              /* attention mask: ones */
    int32_t pad_id;
};

#endif
