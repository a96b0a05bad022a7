/*
 * pipeline/build_chunk.h: phase 1's unit of work, shared by the reading,
 * cleaning and committing code (build.c) and the statistics it feeds
 * (build_observe.c). Private to the build.
 */
#ifndef PS_PIPELINE_BUILD_CHUNK_H
#define PS_PIPELINE_BUILD_CHUNK_H

#include "pipeline/build_internal.h"

#define NOOFF ((size_t)-1)

/* One cleaned record as a worker leaves it: the item, with its strings as
 * offsets into the chunk's arena until the chunk is complete. */
typedef struct packed {
    ps_clean_item it;
    ps_item_offsets offs; /* the item's strings in the chunk's arena */
    size_t o_spool;        /* kept, encoded and of this --part: its spool record in
                            * the chunk's spool (ps_spool_record_put); else NOOFF */
    uint32_t ntokens, type_boundary, unk_tokens;
    size_t o_unk;   /* words that became [UNK]: field, hint, length (2 bytes LE), bytes; n_unk */
    uint32_t n_unk;
    uint32_t raw_q_chars, raw_s_chars, q_chars, s_chars;
    bool q_changed, s_changed; /* kept: cleaning changed the question, the sql */
    bool truncated;
    bool shortened;    /* a schema prompt was shortened to fit */
    uint32_t tables_dropped, columns_dropped;
    uint8_t gold;      /* gold recall, as ps_vsql_record.gold */
    ps_vgen_ends ends; /* causal, seq2seq: the end, the junction, the round trip */
    size_t o_rt;       /* a round-trip mismatch: its detail in the arena, else NOOFF */
    bool history, history_hidden; /* earlier utterances; not in the prompt */
} packed;

typedef struct chunk {
    ps_input_ctx in;       /* a copy without src/rr: what workers may read */
    size_t n;
    ps_raw_record *recs;   /* data pointers into raw (fixed after filling) */
    size_t *raw_off;
    ps_buf raw;
    packed *items;
    ps_buf out;            /* arena of the packed strings and [UNK] words */
    ps_buf spool;          /* its kept records' spool layouts, which the worker
                            * appended to worker spool spool_index at spool_base */
    size_t spool_index;
    uint64_t spool_base;
    int rc;
    ps_error err;
    unsigned char *taken;  /* per record: committed in this part */
    /* Whole JSONL lines in raw (ps_input_take_lines): the worker splits
     * them into recs (ps_lines_split), so the reading thread only copies
     * bytes; n is 0 until then. */
    bool lines;
    uint64_t first_line;   /* of the first line */
    uint64_t blank;        /* blank lines the worker skipped */
    size_t input;          /* the input's position in cfg->inputs */
    /* With the dedupe split (phase1.parts): the kept records this part
     * commits, grouped by dedupe part by the worker that cleaned them */
    ps_part_groups groups;
    /* A line range of a plain JSONL input (ingest/range_chain.c): the
     * worker reads it (range.data holds the lines, not raw) and takes its
     * first line in chain order */
    bool ranged;
    ps_range_ticket ticket;
    ps_line_range range;
} chunk;


/* Whether the workers add this record's lengths (ps_build_observe_lengths)
 * when they cover `worker_labels` label numbers: an unlabeled record, or
 * one whose label's number is below it; with 0, none. Many labels would
 * cost every worker ~36 KiB each, so those past the cover are the
 * statistics stage's, like everything else. */
static inline bool ps_build_lengths_by_workers(const packed *pk, uint32_t worker_labels)
{
    return worker_labels && (!pk->it.res.label || pk->it.label_no < worker_labels);
}

/* Adds a committed chunk's records to the statistics, in input order
 * (the statistics stage, or the calling thread), but the lengths the
 * workers add (ps_build_lengths_by_workers): they read only the chunk and
 * the statistics, which no other thread touches during phase 1.
 * 0 or PS_ENOMEM. */
int ps_build_observe_chunk(ps_build_state *st, const chunk *ch, uint32_t worker_labels);

/* A worker's statistics that come out the same in any order: the three
 * points, for causal and seq2seq sets the generation lengths, and the
 * paired view's counts (ps_vpaired_add_counts). */
typedef struct ps_build_lengths {
    ps_vstats *raw, *clean, *tok;
    ps_vgen *gen;
    ps_vpaired *paired;
} ps_build_lengths;

/* The build's own: where the statistics stage adds them. */
static inline ps_build_lengths ps_build_state_lengths(const ps_build_state *st)
{
    return (ps_build_lengths){st->v_raw, st->v_clean, st->v_tok, st->v_gen, st->paired};
}

/* New, empty ones (gen: with generation lengths). 0 or PS_ENOMEM (then
 * nothing is left allocated). */
int ps_build_lengths_new(ps_build_lengths *l, bool gen);
void ps_build_lengths_free(ps_build_lengths *l);
/* Adds the lengths of a committed chunk's records that the workers cover
 * into `into` (a worker, in any order of chunks). 0 or PS_ENOMEM. */
int ps_build_observe_lengths(const ps_build_lengths *into, const chunk *ch,
                             uint32_t worker_labels);
/* Adds `from` into `into` (both of the same kind: with generation lengths
 * or without). 0 or PS_ENOMEM. */
int ps_build_lengths_merge(const ps_build_lengths *into, const ps_build_lengths *from);

#endif
