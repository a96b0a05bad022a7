/*
 * ingest/ingest.h — internal interfaces of the ingest and cleaning stage.
 *
 *   source.c     byte streams: file or stdin, gzip or zstd decoded on the fly
 *   records.c    splitting a stream into raw records (JSONL lines, JSON array
 *                elements, CSV/TSV rows) with their position
 *   fields.c     extracting question/sql/label/id from a raw record
 *   utf8.c       UTF-8 validation and repair
 *   text.c       normalisation, control removal, whitespace folding
 *   sql_ws.c     quote- and comment-aware whitespace folding for SQL
 *   rules.c      user PCRE2 rules
 *   dedupe.c     set of cleaned-pair hashes
 *   stats.c      accounting
 *   cleaner.c    the public ps_cleaner, tying the above together
 */
#ifndef PS_INGEST_H
#define PS_INGEST_H

#include "common/ps_internal.h"
#include "common/unicode.h"
#include "pairshard/clean.h"
#include "schema/schema.h"

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- source.c: decompressing byte source --------------------------------- */

typedef enum { PS_COMP_NONE = 0, PS_COMP_GZIP, PS_COMP_ZSTD } ps_compression;

typedef struct ps_source ps_source;

/* Opens `path` ("-" is stdin). Compression is detected from the magic bytes;
 * a name ending in .gz/.zst whose bytes are not that format is an error. */
int ps_source_open(ps_source **out, const char *path, ps_error *err);
/* Reads up to n decoded bytes. Returns the count, 0 at end, or a negative
 * code (PS_EIO, PS_EDECOMPRESS) with a message naming the file. */
ssize_t ps_source_read(ps_source *s, void *buf, size_t n, ps_error *err);
void ps_source_close(ps_source *s);
const char *ps_source_path(const ps_source *s);
uint64_t ps_source_bytes_decoded(const ps_source *s);
/* The file descriptor of a named, uncompressed input, whose decoded bytes
 * are its own (offset for offset); -1 for stdin or a compressed one. */
int ps_source_plain_fd(const ps_source *s);

/* ---- records.c: raw record splitting ------------------------------------- */

typedef struct ps_raw_record {
    const char *data; /* raw bytes of the record (not NUL-terminated) */
    size_t len;
    uint64_t line;    /* 1-based line where the record starts */
    uint64_t index;   /* 0-based record index (JSON arrays: element index) */
    bool too_long;    /* longer than max_record_bytes: data holds a prefix */
    /* A problem found while splitting, reported as a rejection: */
    const char *error_reason; /* NULL, "bad_json" or "bad_csv" (or, for a
                                 dialogue without turns, its rejection) */
    char error_detail[160];
    /* With opts.turns_path: the turn of the dialogue in data this record
     * is (0-based), or -1 for a dialogue rejected whole. Else -1. */
    long turn;
} ps_raw_record;

typedef struct ps_record_reader ps_record_reader;

/* Bytes of a record over max_record_bytes kept (its prefix) for the rejects. */
#define PS_RECORD_PREFIX_KEEP 4096

/* Wraps an open source; `format` must not be AUTO (see ps_format_detect). */
int ps_record_reader_create(ps_record_reader **out, ps_source *src, ps_format format,
                            size_t max_record_bytes, ps_error *err);
/* Returns 1 and fills *rec (valid until the next call), 0 at the end, or a
 * negative code for a stream-level failure. */
int ps_record_reader_next(ps_record_reader *r, ps_raw_record *rec, ps_error *err);
/* CSV/TSV: the header's column names (after the first record read). */
size_t ps_record_reader_columns(const ps_record_reader *r, const char *const **names);
/* A CSV/TSV row split into unquoted fields (caller-owned, so that worker
 * threads can split rows of their own). fields[i] are NUL-terminated. */
typedef struct ps_csv_row {
    ps_buf buf;
    const char **fields;
    size_t *lens;
    size_t n, fields_cap;
    size_t *offs;
    size_t cap;
} ps_csv_row;
void ps_csv_row_init(ps_csv_row *row);
void ps_csv_row_free(ps_csv_row *row);
/* Splits a row's bytes (RFC 4180 quoting). Returns 0 or PS_ENOMEM. */
int ps_csv_split(ps_csv_row *row, char delim, const char *p, size_t n);
/* ',' for CSV, '\t' for TSV. */
char ps_format_delimiter(ps_format f);
uint64_t ps_record_reader_blank_lines(const ps_record_reader *r);
/* JSONL: appends whole lines to `dst`, as they are, up to about
 * `want_bytes` and at most `max_lines`, so that a worker can split them
 * (ps_lines_split) instead of the reading thread. *first_line: the line of
 * the first. Returns the lines taken, or 0 when the next record must come
 * from ps_record_reader_next (not JSONL; the input's first line, which may
 * hold a BOM; a line longer than max_record_bytes; a last line without a
 * newline; the end), or a negative code. */
int ps_record_reader_take_lines(ps_record_reader *r, ps_buf *dst, size_t want_bytes,
                                size_t max_lines, uint64_t *first_line, ps_error *err);
/* Splits lines taken by ps_record_reader_take_lines (or a line range,
 * ps_line_range_take) into at most `cap` records (pointing into data) as
 * ps_record_reader_next would give them: the CR of a CRLF dropped, blank
 * lines skipped (counted into *blank_lines), a line longer than `max`
 * (max_record_bytes) a too_long record of its first PS_RECORD_PREFIX_KEEP
 * bytes. rec->index counts from 0 within the block only. Returns the
 * number of records. */
size_t ps_lines_split(const char *data, size_t len, uint64_t first_line, size_t max,
                      ps_raw_record *recs, size_t cap, uint64_t *blank_lines);
/* JSONL: whether the reader is at the start of a line past the input's
 * first (which may hold a BOM), so that the rest may be read as line
 * ranges; *pending: bytes it holds, read from the source but not handed
 * out; *line: the next line's number. */
bool ps_record_reader_at_line(const ps_record_reader *r, uint64_t *pending, uint64_t *line);
/* The max_record_bytes it splits with (at least 1). */
size_t ps_record_reader_max(const ps_record_reader *r);
void ps_record_reader_free(ps_record_reader *r);

/* ---- line_range.c: a plain JSONL file's lines read by the workers ------- */

/* A chunk takes at most this many lines, and lines that start within this
 * many bytes of its first (so a chunk holds about what a chunk of whole
 * lines does: CHUNK_RECORDS lines of Spider's length). */
#define PS_RANGE_RECORDS 4096
#define PS_RANGE_BYTES ((size_t)256 << 10)

/* One chunk's lines. The caller sets fd, path, size (the file's size when
 * its ranges began: bytes added after are not read), max
 * (max_record_bytes) and end; the functions fill the rest. */
typedef struct ps_line_range {
    int fd;
    const char *path;
    uint64_t size;
    size_t max;
    uint64_t end;    /* the chunk's lines start before this (its nominal range's end) */
    ps_buf data;     /* the file's bytes [at, at + data.len) */
    uint64_t at;
    /* ps_line_range_take's: `lines` lines from `from`, whose bytes data
     * holds up to `stored`; the next line starts at `next` */
    uint64_t from, next, stored, lines;
} ps_line_range;

void ps_line_range_init(ps_line_range *r);
void ps_line_range_free(ps_line_range *r);
/* Reads the nominal range [begin, end) and the byte before it: *guess is
 * the first line start in it, as far as its own bytes tell (UINT64_MAX:
 * none, a line from before runs through it). 0, PS_EIO (also when the
 * file is now shorter than `size`) or PS_ENOMEM, naming the file. */
int ps_line_range_read(ps_line_range *r, uint64_t begin, uint64_t *guess, ps_error *err);
/* Takes the lines from `from`, a line's start, that start before `end`:
 * at most max_lines, and no line that starts max_bytes or more past
 * `from`; a line over `max` is held to its first max + 1 (at least
 * PS_RECORD_PREFIX_KEEP) bytes and ends the chunk. Reads what data lacks
 * (all of it when `from` is outside). Then data.data + (from - at), for
 * stored - from bytes, are the lines for ps_lines_split (with `max`).
 * 0, PS_EIO or PS_ENOMEM. */
int ps_line_range_take(ps_line_range *r, uint64_t from, size_t max_lines, size_t max_bytes,
                       ps_error *err);
/* The lines ps_line_range_take took, split into at most `cap` records
 * numbered from first_line (ps_lines_split with the range's max). */
size_t ps_line_range_split(const ps_line_range *r, uint64_t first_line, ps_raw_record *recs,
                           size_t cap, uint64_t *blank_lines);

/* ---- range_chain.c: line ranges handed out and taken in input order ---- */

/* The chain, under the caller's mutex: the chunks before ticket `seq`
 * have passed it on; the next one's lines start at `next`, numbered from
 * `line`. */
typedef struct ps_range_chain {
    pthread_mutex_t *mu;
    pthread_cond_t cv;
    uint64_t seq, next, line;
    bool failed; /* a chunk could not read its lines: the commit reports it */
} ps_range_chain;

/* What a range chunk is handed: its place in the chain, its nominal
 * start, and for an input's first chunk (first) where its lines start
 * (begin) and the first one's number. */
typedef struct ps_range_ticket {
    uint64_t seq, begin, line;
    bool first;
} ps_range_ticket;

/* The calling thread's state for the input it hands out as ranges. */
typedef struct ps_range_reader {
    bool on, first;
    int fd;             /* a duplicate, closed by ps_range_reader_stop */
    uint64_t pos, size; /* the next range starts at pos */
    uint64_t line;      /* the first range's first line */
    size_t max;         /* max_record_bytes */
    uint64_t seq;       /* the next ticket */
} ps_range_reader;

/* Inputs with less left than this after the records read so far are read
 * on as they are: the chain's end costs the calling thread a wait. */
#define PS_RANGES_MIN ((uint64_t)2 * PS_RANGE_BYTES)

/* 0, or PS_ENOMEM. The chain waits and signals under *mu. */
int ps_range_chain_init(ps_range_chain *c, pthread_mutex_t *mu);
void ps_range_chain_destroy(ps_range_chain *c);
/* The next range (or, the ranges out, a chunk for what the chain left):
 * sets lr's fd, path, size, max and end and the ticket, and returns 1; 0
 * when the input is done: the chain has passed every chunk of it, so none
 * reads any more (it waits for that, under *c->mu). */
int ps_range_reader_next(ps_range_reader *rr, ps_range_chain *c, const char *path,
                         ps_line_range *lr, ps_range_ticket *t);
/* Closes the input's descriptor: after ps_range_reader_next said done, or
 * once no worker runs. */
void ps_range_reader_stop(ps_range_reader *rr);
/* A worker: reads the chunk's range, takes its lines in chain order
 * (*first_line: the first one's number; lr's from, stored and lines say
 * which, for ps_lines_split) and passes the chain on, also on failure.
 * 0, or PS_EIO or PS_ENOMEM naming the file. */
int ps_range_chain_take(ps_range_chain *c, ps_line_range *lr, const ps_range_ticket *t,
                        uint64_t *first_line, ps_error *err);
/* Passes the chain on for a chunk a worker cannot read at all. */
void ps_range_chain_skip(ps_range_chain *c, const ps_range_ticket *t);

/* Peeks at the stream to choose a format: '[' → JSON, '{' → JSONL, else by
 * the name (.tsv, .csv; also under .gz/.zst), else by the header line (tabs
 * vs commas). The peeked bytes are not consumed. */
int ps_format_detect(ps_source *src, ps_format *out, ps_error *err);
/* Returns up to n bytes from the start of the stream without consuming
 * them; used by ps_format_detect. */
ssize_t ps_source_peek(ps_source *s, const char **p, size_t n, ps_error *err);

/* ---- utf8.c --------------------------------------------------------------- */

/* Decodes one code point from s[0..n). Returns its length (1-4) and sets
 * *cp, or returns -k where k >= 1 is the length of the maximal invalid
 * subsequence at s (Unicode's "maximal subpart" practice). n must be > 0. */
int ps_utf8_decode(const unsigned char *s, size_t n, int32_t *cp);
/* Returns the byte offset of the first invalid sequence, or n if valid. */
size_t ps_utf8_check(const char *s, size_t n);
/* Appends s to out with every invalid subsequence replaced by U+FFFD;
 * *replaced receives the number of replacements. 0 or PS_ENOMEM. */
int ps_utf8_repair(const char *s, size_t n, ps_buf *out, size_t *replaced);

/* ---- text.c and sql_ws.c: cleaning steps ---------------------------------
 * Each step reads valid UTF-8 `in` and writes the result to `out` (reset
 * first). Each returns 0 or PS_ENOMEM/PS_EUTF8. */
int ps_text_normalize(const char *in, size_t n, ps_normalization form, ps_buf *out);
int ps_text_strip_controls(const char *in, size_t n, bool strip_joiners, ps_buf *out,
                           size_t *removed);
int ps_text_fold_whitespace(const char *in, size_t n, ps_buf *out);
int ps_sql_fold_whitespace(const char *in, size_t n, bool backslash_escapes, ps_buf *out,
                           bool *unterminated);
int ps_space_len_slow(const unsigned char *s, size_t n);
/* Length in bytes of the White_Space character at s[0..n), 0 if none.
 * Inline: it runs once per byte of every field. */
static inline int ps_space_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return (c == ' ' || (c >= 0x09 && c <= 0x0D)) ? 1 : 0;
    /* every non-ASCII White_Space character starts with one of these */
    if (c != 0xC2 && c != 0xE1 && c != 0xE2 && c != 0xE3)
        return 0;
    return ps_space_len_slow(s, n);
}

/* What a field needs, from one pass over its bytes: cleaning steps whose
 * flag is absent would leave the field unchanged and are skipped. */
enum {
    PS_SCAN_NONASCII = 1, /* normalisation, Unicode controls and spaces */
    PS_SCAN_CONTROL = 2,  /* an ASCII control byte to remove */
    PS_SCAN_FOLD = 4      /* whitespace other than single inner spaces (a
                             conservative flag: it may be set needlessly) */
};
unsigned ps_text_scan(const char *s, size_t n);

/* ---- rules.c -------------------------------------------------------------- */

typedef enum { PS_RULE_REPLACE, PS_RULE_DROP_IF } ps_rule_kind;
enum { PS_FIELD_QUESTION = 1, PS_FIELD_SQL = 2 };

typedef struct ps_rule_stats {
    uint64_t matched; /* records in which the pattern matched */
    uint64_t changed; /* records a replace rule changed */
    uint64_t dropped; /* records a drop_if rule rejected */
} ps_rule_stats;

typedef struct ps_rules ps_rules;

int ps_rules_create(ps_rules **out);
void ps_rules_free(ps_rules *r);
int ps_rules_add_json(ps_rules *r, const char *text, size_t len, const char *origin,
                      ps_error *err);
size_t ps_rules_count(const ps_rules *r);
/* The PS_FIELD_* bits of the fields that at least one rule applies to. */
int ps_rules_fields(const ps_rules *r);
const char *ps_rules_name(const ps_rules *r, size_t i);
ps_rule_stats *ps_rules_stats(ps_rules *r, size_t i);

/* Outcome of applying the rules to one field. */
typedef struct ps_rules_outcome {
    bool dropped;          /* a drop_if rule matched */
    bool failed;           /* a rule hit the match limit: reject (rule_error) */
    size_t rule;           /* the rule that dropped or failed */
    char detail[160];
} ps_rules_outcome;

/* Per-thread PCRE2 match data (NULL when out of memory). */
void *ps_rules_match_data_new(const ps_rules *r);
void ps_rules_match_data_free(void *md);

/* Applies, in order, the rules for `field` (PS_FIELD_*) to `text` (in
 * place, swapping with scratch), matching with the caller's match data.
 * Thread-safe: `r` is only read. `touched` is a per-record array of
 * ps_rules_count() flags: bit 1 matched, bit 2 changed, so a rule that hits
 * both fields counts the record once. Returns 0, or a negative code for an
 * unexpected PCRE2 failure. */
int ps_rules_apply(const ps_rules *r, void *match_data, int field, ps_buf *text,
                   ps_buf *scratch, unsigned char *touched, ps_rules_outcome *outcome,
                   ps_error *err);

/* ---- dedupe.c ------------------------------------------------------------- */

typedef struct ps_dedupe ps_dedupe;

/* XXH3-128 of a cleaned (question, sql) pair, never {0, 0}. Computed by
 * worker threads; inserted in input order by one. */
typedef struct ps_pair_hash {
    uint64_t low, high;
} ps_pair_hash;
ps_pair_hash ps_dedupe_hash(const char *q, size_t qn, const char *s, size_t sn);

int ps_dedupe_create(ps_dedupe **out);
void ps_dedupe_free(ps_dedupe *d);
/* Looks up the pair whose hash is `h`. If new, remembers it with a copy of
 * `id` (its id_len bytes, a NUL added) and `label_hash` and returns 0. If
 * seen, returns 1 and sets *first_id to the kept record's id (valid until
 * the table is freed) and *label_conflict when the labels differ.
 * PS_ENOMEM. */
int ps_dedupe_insert_hash(ps_dedupe *d, ps_pair_hash h, const char *id, size_t id_len,
                          uint32_t label_hash, const char **first_id, bool *label_conflict);
/* Ids spelled "<prefix><decimal number>" (an input's default ids) are
 * inserted by number: ps_dedupe_add_prefix copies a prefix and numbers it
 * (0, 1, ...; 0 or PS_ENOMEM/PS_ELIMIT), and ps_dedupe_insert_pos is
 * ps_dedupe_insert_hash for the id prefix `prefix` then `pos` would spell,
 * spelled only when a duplicate asks for it (*first_id then as above).
 * PS_EINVAL for a prefix never added. */
int ps_dedupe_add_prefix(ps_dedupe *d, const char *prefix, size_t len, uint32_t *no);
int ps_dedupe_insert_pos(ps_dedupe *d, ps_pair_hash h, uint32_t prefix, uint64_t pos,
                         uint32_t label_hash, const char **first_id, bool *label_conflict);
/* Starts loading the slot `h` would probe first: an in-order commit calls
 * it a few records ahead, so the table's cache misses overlap (a hint:
 * no effect on the result). */
void ps_dedupe_prefetch(const ps_dedupe *d, ps_pair_hash h);
/* Makes room for n entries in all (a table that doubles as it fills pays
 * a rehash, fresh pages and, with other threads running, TLB shootdowns
 * each time). 0 or PS_ENOMEM (the table is unchanged). */
int ps_dedupe_reserve(ps_dedupe *d, size_t n);
/* The entries it holds. */
size_t ps_dedupe_count(const ps_dedupe *d);

/* ---- stats.c -------------------------------------------------------------- */

typedef struct ps_stats ps_stats;

typedef struct ps_step_counts {
    uint64_t utf8_repaired_records, utf8_replacements;
    uint64_t normalized_question, normalized_sql;
    uint64_t control_records, control_chars_removed;
    uint64_t rules_changed_records;
    uint64_t whitespace_question, whitespace_sql;
    uint64_t changed_records; /* kept records whose question or sql changed */
    uint64_t sql_unterminated_quote;
    uint64_t label_conflicts; /* duplicates whose label differs from the kept one */
    uint64_t blank_lines;
} ps_step_counts;

int ps_stats_create(ps_stats **out);
void ps_stats_free(ps_stats *s);
ps_step_counts *ps_stats_steps(ps_stats *s);
/* Records one outcome. `label` may be NULL (no label, or not parsed).
 * *label_no (when not NULL): the label's number, counting labels in the
 * order they were first recorded, or PS_LABEL_NO_NONE without one. */
#define PS_LABEL_NO_NONE UINT32_MAX
int ps_stats_record(ps_stats *s, const char *input, ps_outcome outcome, const char *reason,
                    const char *label, uint32_t *label_no);
/* The same for a record whose label has the number `known` (an earlier
 * record's label_no, whose label is the same string): the label's bytes
 * are not read. PS_LABEL_NO_NONE: not known, as ps_stats_record. */
int ps_stats_record_known(ps_stats *s, const char *input, ps_outcome outcome,
                          const char *reason, const char *label, uint32_t known,
                          uint32_t *label_no);
/* Counts a kept record whose id an earlier kept record (first_source)
 * has. 0 or PS_ENOMEM. */
int ps_stats_id_collision(ps_stats *s, const char *id, const char *first_source,
                          const char *source);
void ps_stats_add_input_bytes(ps_stats *s, const char *input, uint64_t bytes);
/* Text-to-SQL accounting: which sections the JSON shows ("sql" with
 * schemas, "dialogues" with turns; the reasons unknown_database and
 * sql_invalid with either), one dialogue read, and one record's SQL checks
 * (sql_raw_class >= 0) and execution. 0 or PS_ENOMEM. */
void ps_stats_enable_text2sql(ps_stats *s, bool sql, bool dialogues);
void ps_stats_add_dialogue(ps_stats *s);
int ps_stats_sql(ps_stats *s, const char *id, int raw_class, int clean_class, int exec_status,
                 uint64_t exec_rows);
void ps_stats_counts(const ps_stats *s, ps_clean_counts *out);
/* Builds the stats JSON (see ps_cleaner_stats_json); rules may be NULL. */
char *ps_stats_to_json(const ps_stats *s, ps_rules *rules);

/* ---- named.c: fields the user named that an input lacks ------------------ */

typedef struct ps_named_inputs ps_named_inputs;
struct ps_field_names;
int ps_named_inputs_create(ps_named_inputs **out);
void ps_named_inputs_free(ps_named_inputs *t);
/* Notes one record of `input`: whether it was an object or a row
 * (`examined`), the PS_HAS_* bits of the fields it had, and (optionally)
 * its keys, NUL-separated. 0 or PS_ENOMEM. */
int ps_named_inputs_note(ps_named_inputs *t, const char *input, bool examined, unsigned present,
                         const char *keys, size_t keys_len);
/* PS_EUSAGE with a message when a field in `named` (PS_NAMED_*) is in no
 * examined record of `input` (NULL: of any input noted), else 0. */
int ps_named_inputs_check(const ps_named_inputs *t, const struct ps_field_names *names,
                          unsigned named, const char *input, ps_error *err);

/* ---- cleaner.c: the record pipeline, split for threads -------------------
 * ps_cleaner_run = for each raw record: ps_clean_record (any thread, with
 * a worker of its own) then ps_cleaner_commit (one thread, input order:
 * dedupe and accounting). pairshard build runs the first in parallel. */

typedef struct ps_clean_worker ps_clean_worker;

typedef struct ps_field_result {
    bool normalized, whitespace, unterminated;
    size_t controls_removed;
} ps_field_result;

/* One record's cleaning, before dedupe: views into the worker, valid until
 * its next record. */
typedef struct ps_clean_item {
    ps_clean_result res;  /* outcome KEPT or REJECTED (DUPLICATE after commit) */
    bool utf8_repaired;
    size_t utf8_replacements;
    bool cleaned;         /* reached the cleaning steps (rule flags valid) */
    bool stepped;         /* cleaning ran to the end (step counts valid) */
    ps_field_result fq, fs;
    const unsigned char *touched; /* per-rule flags */
    long dropped_rule;    /* rule index, or -1 */
    bool changed;         /* kept: cleaning changed question or sql */
    /* the fields as read, before cleaning (when they could be read) */
    bool parsed;
    const char *raw_question, *raw_sql;
    size_t raw_question_len, raw_sql_len;
    size_t label_len;
    bool examined;        /* an object or row: `present` is valid */
    unsigned present;     /* PS_HAS_* of the fields the record had */
    const char *keys;     /* its keys (NUL-separated) when a named field was
                             absent from one of the input's first records */
    size_t keys_len;
    bool id_from_field;   /* the id is the record's (else a default, unique by making) */
    bool id_collision;    /* kept, after commit: an earlier kept record has its id */
    ps_pair_hash hash;    /* kept: of the cleaned pair (of prompt and
                             completion with a template) */
    uint32_t label_hash;
    /* ps_cleaner_resolve looked the pair up (a split dedupe): the outcome
     * says whether it is a duplicate, label_conflict whether its label
     * differs from the kept one's; ps_cleaner_commit only counts them */
    bool resolved, label_conflict;
    ps_pair_hash id_hash; /* of the id, when id_from_field (computed by the worker) */
    /* strlen of res.id and res.source as ps_clean_item_pack found them (the
     * committing thread need not walk the strings again), else 0: unknown */
    size_t id_len, source_len;
    /* the id is its input's default, "<base>:<id_pos>" ("<base>:#<id_pos>"
     * in a JSON array), whose first id_prefix_len bytes hash (XXH3-64) to
     * id_prefix_hash: the dedupe keeps the number, not the string */
    bool id_default;
    uint64_t id_pos;
    size_t id_prefix_len;
    uint64_t id_prefix_hash;
    /* After ps_cleaner_commit: the label's number in the accounting (the
     * labels of committed records, numbered as first seen), or
     * PS_LABEL_NO_NONE: a key for per-label tables that need no strings. */
    uint32_t label_no;
    /* Set by ps_label_links_set (a worker): 1 + the index, in the same
     * chunk, of the first earlier record with the same label, or 0. */
    uint32_t label_as;
    /* text-to-SQL (text2sql.c): SQLite's verdict on the raw and the cleaned
     * SQL (ps_sql_class; -1: not checked), its messages ("" when ok) */
    int sql_raw_class, sql_clean_class;
    const char *sql_raw_msg, *sql_clean_msg;
    int exec_status;      /* ps_exec_status, -1: not run */
    const char *exec_msg; /* SQLite's message of an error or timeout, else NULL */
    uint64_t exec_rows;
    /* the raw SQL's run (-1: not run) and both result fingerprints
     * (ps_sql_execute_fp): a rule that changed the result is a
     * sql_result_regression */
    int exec_before;
    bool exec_sql_changed; /* cleaning changed the SQL: it ran twice */
    uint64_t exec_before_rows, exec_before_hash, exec_hash;
    const ps_schema *schema; /* the record's database, NULL without schemas */
    /* what the template read (valid until the worker's next record: the
     * build re-renders it with a mask to shorten the schema) */
    ps_render_fields render;
    /* a build with held-out sets (pipeline/build_leak.c): the worker
     * compared the kept record, and the kinds it shares (bit k) */
    bool leak_checked;
    uint8_t leak_kinds;
    /* with a difficulty field (ps_cleaner_set_difficulty_field): the
     * record's value, or "missing"; else NULL */
    const char *difficulty;
} ps_clean_item;

/* CSV/TSV: header positions of the fields, -1 when absent. */
typedef struct ps_column_map {
    ssize_t question, sql, label, id;
    ssize_t db, extra[16]; /* ps_field_names.db and .extra (fields.h) */
    ssize_t difficulty;    /* ps_field_names.difficulty */
} ps_column_map;

/* An open input: its source, format, record splitter and column map. */
typedef struct ps_input_ctx {
    const char *path, *base;
    ps_format fmt;
    ps_source *src;
    ps_record_reader *rr;
    ps_column_map map;
    size_t ncols;
    bool mapped;
    /* dialogues (turns.c): the current one's record and bytes, and its
     * next turn */
    ps_raw_record dlg;
    ps_buf dlg_bytes;
    long dlg_turns, dlg_next;
    /* the first records' count and bytes, until the tables are sized for
     * the input (ps_input_next) */
    uint64_t seen_records, seen_bytes;
    bool expected;
    /* lines went to workers whole (ps_input_take_lines): the rec->index of
     * this input's later records is a lower bound, settled at the commit */
    bool took_lines;
    /* the rest was read as line ranges (ps_range_reader_start): the
     * input's bytes are its size then */
    uint64_t ranged_size;
} ps_input_ctx;

/* Only 1 in `share` records read will be committed (a --part K/N build
 * commits its part's): the duplicate and id tables are sized for that. */
void ps_cleaner_set_expect_share(ps_cleaner *c, size_t share);

/* An item's strings as offsets into an arena: what a worker hands the
 * committing thread (item_pack.c). */
#define PS_ITEM_STRINGS 18

/* Reads each record's own difficulty from the field `names` (candidates,
 * comma-separated, the first present wins: a string, number or boolean)
 * into ps_clean_item.difficulty, for the statistics' hardness levels in
 * place of Spider's classes of the SQL. Before cleaning starts. 0,
 * PS_EUSAGE (a bad list), PS_EINVAL (set twice, or too late), PS_ENOMEM. */
int ps_cleaner_set_difficulty_field(ps_cleaner *c, const char *names, ps_error *err);
typedef struct ps_item_offsets {
    size_t off[PS_ITEM_STRINGS];
    size_t touched;
} ps_item_offsets;
/* ps_clean_result_json's line appended to b (no newline), serialised in
 * place for a kept record. 0 or PS_ENOMEM (b as it was). */
int ps_clean_result_json_append(const ps_clean_result *r, ps_buf *b);
/* Copies the item's strings (the original only for a rejection) and its
 * nrules rule flags into `arena`, their offsets into *o, and forgets its
 * render fields (they point into the worker). 0 or PS_ENOMEM. */
int ps_clean_item_pack(ps_clean_item *it, size_t nrules, ps_buf *arena, ps_item_offsets *o);
/* Points the item's strings at their copies in `arena` (once it no longer
 * grows). */
void ps_clean_item_unpack(ps_clean_item *it, const ps_buf *arena, const ps_item_offsets *o);

int ps_clean_worker_create(const ps_cleaner *c, ps_clean_worker **out);
void ps_clean_worker_free(ps_clean_worker *w);
/* Cleans one raw record. Thread-safe across workers (the cleaner is only
 * read). Returns 0 or a negative code (out of memory, a rule failure). */
int ps_clean_record(ps_clean_worker *w, const ps_input_ctx *in, const ps_raw_record *rec,
                    ps_clean_item *it, ps_error *err);
/* ps_cleaner_clean_text (pairshard/clean.h) with worker `w` of the
 * cleaner: *out points into w, so callers on several threads each give
 * their own worker (the preprocessor's pool). */
int ps_clean_worker_clean_text(ps_clean_worker *w, const char *field, const char *text,
                               size_t len, const char **out, size_t *out_len,
                               const char **reason, ps_error *err);
/* Dedupes and accounts one item, in input order (one thread). A kept item
 * may become a duplicate (res.duplicate_of set). */
int ps_cleaner_commit(ps_cleaner *c, const char *input, ps_clean_item *it, ps_error *err);
/* The same, `same` (may be NULL) an item committed before `it` whose
 * label is the same string (ps_label_links_set found it): its label_no
 * is taken rather than `it`'s label looked up. */
int ps_cleaner_commit_as(ps_cleaner *c, const char *input, ps_clean_item *it,
                         const ps_clean_item *same, ps_error *err);

/* ---- label_links.c: a chunk's repeated labels, found by its worker -------
 * The in-order commit numbers each record's label by looking its string
 * up; the string was written by the worker, on another core, so reading
 * it is a cache miss a record, most of the commit's time. A worker links
 * each record of its chunk to the first earlier one with the same label
 * (comparing the strings itself, in its own cache), and the commit takes
 * that record's number: one lookup per distinct label per chunk. */
typedef struct ps_label_links {
    uint32_t *slots; /* open addressing: 1 + a record's index, 0 empty */
    size_t cap;
} ps_label_links;
/* Sets label_as of the n items (each `stride` bytes after the one
 * before, a ps_clean_item at the start of each) whose label an earlier
 * one has; the others' to 0. Without memory for the table every label_as
 * is 0 (the commit then looks each label up). */
void ps_label_links_set(ps_label_links *l, void *items, size_t stride, size_t n);
void ps_label_links_free(ps_label_links *l);
/* ---- dedupe_parts.c: the dedupe split by hash, for threads ---------------
 * Whether a kept pair is a duplicate depends only on the kept pairs before
 * it with the same hash, so the table can be split by hash into parts,
 * each looked up in input order by one thread at a time while other parts
 * go on elsewhere; ps_cleaner_commit then only counts the result. The
 * outcome, and the id a duplicate names, are those of the unsplit table.
 *
 * ps_cleaner_split_dedupe: from now on kept pairs are looked up in `n`
 * parts (1..PS_DEDUPE_PARTS_MAX), by ps_cleaner_resolve, before their
 * commit (with duplicates kept nothing is looked up, nor split). Only
 * before the first commit. 0, PS_EINVAL (n out of range, split already,
 * or a record committed already) or PS_ENOMEM (nothing changed). */
#define PS_DEDUPE_PARTS_MAX 256
int ps_cleaner_split_dedupe(ps_cleaner *c, size_t n);
/* The part a cleaned item is looked up in, or SIZE_MAX when it is not
 * looked up (not kept, duplicates kept, the dedupe not split). The caller
 * decides which kept items it commits (a --part build skips the others'). */
size_t ps_cleaner_dedupe_part(const ps_cleaner *c, const ps_clean_item *it);
/* Looks the kept item up in part `part` (ps_cleaner_dedupe_part's): its
 * outcome becomes DUPLICATE (duplicate_of the kept record's id, valid
 * while the cleaner lives) when an earlier item resolved in that part had
 * its pair. Calls for one part are made one at a time, in input order;
 * calls for different parts, ps_cleaner_commit and the reading calls may
 * run at once. 0, or PS_ENOMEM / PS_ELIMIT with a message naming the
 * record. */
int ps_cleaner_resolve(ps_cleaner *c, size_t part, ps_clean_item *it, ps_error *err);
/* A hint a few items before ps_cleaner_resolve of `it` in `part`. */
void ps_cleaner_resolve_prefetch(const ps_cleaner *c, size_t part, const ps_clean_item *it);
/* The parts of a split dedupe, 0 when not split. */
size_t ps_cleaner_dedupe_parts(const ps_cleaner *c);

/* A chunk's items grouped by dedupe part, for the threads that look them
 * up: part k's are idx[start[k] .. start[k + 1]), in input order. */
typedef struct ps_part_groups {
    uint32_t *idx;   /* room for as many items as a chunk holds */
    uint32_t *start; /* room for parts + 1 */
} ps_part_groups;
/* Room for a chunk of `records` items in `parts` parts. 0 or PS_ENOMEM
 * (free it either way). */
int ps_part_groups_init(ps_part_groups *g, size_t records, size_t parts);
void ps_part_groups_free(ps_part_groups *g);
/* Groups the `n` items at `items` (each `stride` bytes apart, each
 * starting with its ps_clean_item) by part, leaving out the items
 * ps_cleaner_dedupe_part leaves out and, when part_count is not 0, the
 * kept items whose hash.low % part_count is not part_index (a --part
 * build's others). n < 2^32. */
void ps_part_groups_fill(const ps_cleaner *c, ps_part_groups *g, void *items, size_t stride,
                         size_t n, uint64_t part_count, uint64_t part_index);
/* ps_cleaner_resolve of part k's items of a group, in order, the table's
 * misses overlapped. 0, or the first failure's code and message with
 * *failed (the item's index into `items`; not NULL) set. */
int ps_part_groups_resolve(ps_cleaner *c, const ps_part_groups *g, void *items, size_t stride,
                           size_t k, size_t *failed, ps_error *err);

/* Whose turn it is in each part, for threads that look up the chunks of a
 * ring (counted as its head and tail are): part k has looked up the
 * chunks before next[k], and busy[k] while a thread looks up the next.
 * One thread at a time a part, each part's chunks in order; a chunk may
 * be committed once every part is past it. The caller's lock guards it. */
typedef struct ps_part_turns {
    size_t n;
    size_t *next;
    bool *busy;
} ps_part_turns;
/* n parts (0: none). 0 or PS_ENOMEM (free it either way). */
int ps_part_turns_init(ps_part_turns *t, size_t n);
void ps_part_turns_free(ps_part_turns *t);
/* A part no thread holds whose next chunk is before `tail` and cleaned
 * (cleaned(ctx, chunk)), or SIZE_MAX. */
size_t ps_part_turns_ready(const ps_part_turns *t, size_t tail,
                           bool (*cleaned)(const void *ctx, size_t chunk), const void *ctx);
/* Whether every part is past chunk `s`. */
bool ps_part_turns_past(const ps_part_turns *t, size_t s);
/* Takes part k's turn (ps_part_turns_ready's): the chunk to look up. */
size_t ps_part_turns_take(ps_part_turns *t, size_t k);
/* Ends part k's turn; whether that put chunk `head`, the one a commit
 * waits for, past every part (then it is the commit's to be woken). */
bool ps_part_turns_end(ps_part_turns *t, size_t k, size_t head);

/* Notes which named fields a record had (every record, in input order,
 * before any --part slicing, so that every part decides alike). */
int ps_cleaner_note_fields(ps_cleaner *c, const char *input, const ps_clean_item *it);
/* A hint before ps_cleaner_commit of `it`, a few records ahead: starts
 * loading what its dedupe and accounting will read. */
void ps_cleaner_prefetch(const ps_cleaner *c, const ps_clean_item *it);
/* PS_EUSAGE when a named field is in no record of `input` (NULL: of any
 * input so far). */
int ps_cleaner_check_fields(const ps_cleaner *c, const char *input, ps_error *err);
int ps_input_open(ps_cleaner *c, ps_input_ctx *in, const char *path, ps_error *err);
/* 1 and a record, 0 at the end, or a negative code. */
int ps_input_next(ps_cleaner *c, ps_input_ctx *in, ps_raw_record *rec, ps_error *err);
/* JSONL without dialogues: appends the input's next whole lines to `dst`
 * (ps_record_reader_take_lines) for a worker to split with ps_lines_split;
 * the lines taken, 0 when the next record must come from ps_input_next,
 * or a negative code. *first_line: the first one's line number. */
int ps_input_take_lines(ps_cleaner *c, ps_input_ctx *in, ps_buf *dst, size_t want_bytes,
                        size_t max_lines, uint64_t *first_line, ps_error *err);
/* Adds blank lines a worker skipped (ps_lines_split) to the accounting:
 * the committing thread. */
void ps_cleaner_add_blank_lines(ps_cleaner *c, uint64_t n);

/* ---- a mixture's sources ------------------------------------------------
 * A build over several sources (datasets, each with its own fields,
 * schemas, template, turns) cleans each source's records with a cleaner
 * of its own made here: its options are `opts`, its record ids start with
 * "<name>/", and it keeps an accounting of its own records. `owner` keeps
 * committing every record (ps_cleaner_commit_as: one dedupe across the
 * sources, the overall accounting), and gets the input counts (bytes,
 * blank lines, dialogues) of the inputs a source reads. The source is
 * owned by `owner` (freed with it). 0, PS_EINVAL or PS_ENOMEM. */
int ps_cleaner_add_source(ps_cleaner *owner, const ps_clean_options *opts, const char *name,
                          ps_cleaner **out, ps_error *err);
/* After the sources' schemas and templates are set: the owner's
 * accounting shows SQL and dialogue counts when any source has them. */
void ps_cleaner_sources_ready(ps_cleaner *owner);
/* After `owner` committed `it` (ps_cleaner_commit_as), a source's own
 * accounting of it: outcome, reason, label, cleaning steps, rules, SQL.
 * 0 or PS_ENOMEM. */
int ps_cleaner_account_source(ps_cleaner *src, const char *input, const ps_clean_item *it,
                              ps_error *err);
/* The committing thread, before ps_cleaner_note_fields: the record is the
 * index-th (0-based) of its input. Needed only for records of an input
 * that took lines (in->took_lines), whose workers knew a lower bound. */
void ps_clean_item_settle_index(ps_clean_item *it, uint64_t index);
/* The calling thread, at a chunk's start: 1 when the rest of `in` is to
 * be handed out as line ranges (range_chain.c): JSONL from a named,
 * uncompressed regular file, at a line past its first, at least
 * PS_RANGES_MIN left, no dialogue turns. Then rr is set up (its fd a
 * duplicate of the input's), in->took_lines set and the records to come
 * guessed from the size. 0 when it must be read on as it is; a negative
 * code (the descriptor could not be duplicated). */
int ps_range_reader_start(ps_range_reader *rr, ps_cleaner *c, ps_input_ctx *in, ps_error *err);
/* A copy of `in` for a chunk's workers to read (its path, format, column
 * map, took_lines): without the source and record reader, which only the
 * reading thread may use. */
void ps_input_share(ps_input_ctx *dst, const ps_input_ctx *in);
/* Closes the input and adds its bytes and blank lines to the accounting. */
void ps_input_close(ps_cleaner *c, ps_input_ctx *in);
const ps_rules *ps_cleaner_rules(const ps_cleaner *c);

/* A check of each kept record, run by the worker that cleaned it (after
 * the text-to-SQL step): returns 0 and leaves *reason NULL to keep it, or
 * sets *reason (a string that outlives the run) and writes `detail` to
 * reject it; or a negative code to stop the run. *scratch is the worker's
 * own (NULL at first; free_scratch frees it with the worker). Used by
 * `pairshard clean --holdout --drop-leaked`. */
typedef int (*ps_clean_check_fn)(void *user, void **scratch, const ps_clean_result *r,
                                 const char **reason, char *detail, size_t dsz, ps_error *err);
/* Sets the check (before the first run; PS_EINVAL after). */
int ps_cleaner_set_check(ps_cleaner *c, ps_clean_check_fn fn, void *user,
                         void (*free_scratch)(void *), ps_error *err);

/* Reads each record's database (opts.db_field) into its result's db_id
 * without schemas or a template, which is all leakage needs of it: no
 * check, no rejection. Before the first run (PS_EINVAL after). */
int ps_cleaner_read_database(ps_cleaner *c, ps_error *err);

#endif /* PS_INGEST_H */
