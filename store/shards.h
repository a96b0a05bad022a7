/*
 * store/shards.h — stage 4: the shard store (internal interface).
 *
 * A shard set is a directory:
 *   manifest.json          what the set holds and how it was made (FORMAT.md)
 *   shard-00000.mdb ...    one LMDB environment per shard (MDB_NOSUBDIR)
 *   rejects.jsonl          records the build rejected
 *
 * In a shard, the "meta" database holds key "format" → a small JSON object
 * {"magic":"pairshard-shard","format_version":1,"shard":K,...}; the
 * "blocks" database maps 8-byte keys — big-endian u32 bucket, big-endian u32
 * block sequence — to blocks, so each bucket is one contiguous key range.
 *
 * A block is one zstd frame (content checksum on) whose content is:
 *   offset 0   "PSB1"                       magic + block format version 1
 *          4   u32 n                        records in the block
 *          8   u8  id_width                 2 (uint16 token ids) or 4
 *          9   u8[3] zero
 *         12   u32 length[n]                tokens of each record
 *              u32 type_boundary[n]         index of the first type-1 token
 *                                           (== length for a single sequence)
 *              u32 label[n]                 label id, 0xFFFFFFFF = none
 *              u32 id_offset[n + 1]         into the id bytes
 *              u8  ids[id_offset[n]]        record ids (UTF-8, not terminated)
 *              (pad to a multiple of id_width)
 *              tokens                       sum(length) ids, id_width bytes each
 * All integers little-endian. Decoders bounds-check every count and offset
 * against the frame size before use.
 */
#ifndef PS_SHARDS_H
#define PS_SHARDS_H

#include "common/ps_internal.h"

#include <stdint.h>

/* The newest version readers accept. Writers write 1 for a pair set (the
 * bytes of version 1) and 2 for causal and seq2seq sets, whose shards hold
 * a third database, "lengths": per block key, the block's record lengths
 * as n little-endian u32 (docs/FORMAT.md). */
#define PS_SHARD_FORMAT_VERSION 2
#define PS_SHARD_LENGTHS_DB "lengths"
/* A set of several sources (a mixture built from several datasets, or
 * independent sets merged) keeps, in each shard, the "sources" database:
 * per block key, the source index of each of the block's records as n
 * little-endian u16 (an index into the manifest's "sources"). A set of one
 * source has none, and its bytes are those it had before sources existed;
 * readers that do not know it ignore it (docs/FORMAT.md). */
#define PS_SHARD_SOURCES_DB "sources"
#define PS_MAX_SOURCES 65535u

/* The format version of a set (manifest and shards) of `layout`. */
static inline int ps_set_format_version(int layout)
{
    return layout == PS_LAYOUT_PAIR ? 1 : 2;
}
#define PS_BLOCK_MAGIC "PSB1"
#define PS_LABEL_NONE 0xFFFFFFFFu

/* One record as it is stored. */
typedef struct ps_shard_record {
    const int32_t *ids; /* `length` token ids */
    uint32_t length;
    uint32_t type_boundary;
    uint32_t label;     /* PS_LABEL_NONE when unlabeled */
    const char *id;     /* the original record id */
    uint32_t id_len;
} ps_shard_record;

/* ---- blocks (block.c) ---------------------------------------------------- */

/* Encodes n records into one compressed block appended to `out` (reset
 * first). id_width is 2 or 4 (every id must fit). `cctx` is the caller's
 * (per-thread) compression context; level is the zstd level. Returns 0 or
 * PS_EINVAL / PS_ERANGE (an id does not fit) / PS_ENOMEM. */
int ps_block_encode(const ps_shard_record *recs, size_t n, int id_width, int level,
                    void *cctx, ps_buf *out, ps_error *err);

/* A decoded block: arrays valid until the scratch buffer is reused. */
typedef struct ps_block_view {
    uint32_t n;
    int id_width;
    const uint32_t *length, *type_boundary, *label, *id_offset;
    const char *ids;
    const void *tokens;      /* id_width bytes each, all records in order */
    const uint64_t *token_start; /* n + 1 prefix sums of length */
    size_t raw_bytes;        /* decompressed content size (for ratios) */
} ps_block_view;

/* Token `k` (0-based over the whole block, record i's tokens are
 * token_start[i] .. token_start[i + 1] - 1) of a decoded block. */
static inline uint32_t ps_block_token(const ps_block_view *v, uint64_t k)
{
    return v->id_width == 2 ? ((const uint16_t *)v->tokens)[k] : ((const uint32_t *)v->tokens)[k];
}

/* Decompresses and validates a block. `data` may be hostile: the frame
 * must be exactly one zstd frame with a content checksum and a declared
 * content size of at most 256 MiB that its own block headers can produce
 * (so nothing large is allocated for a small frame). Returns 0, or PS_ECORRUPT with a
 * message saying what is wrong (checksum, magic, a count or offset out of
 * bounds), or PS_ENOMEM. `dctx` is the caller's decompression context. */
int ps_block_decode(const void *data, size_t len, void *dctx, ps_buf *scratch,
                    ps_block_view *view, ps_error *err);

/* ---- shard files (shard_writer.c, shard_reader.c) ------------------------ */

typedef struct ps_shard_writer ps_shard_writer;

/* Starts writing the shard at `path` (a new file). Returns 0 or PS_EIO. */
int ps_shard_writer_open(ps_shard_writer **out, const char *path, ps_error *err);
/* Same with the temporary map starting at `initial_map` bytes (0: 1 GiB);
 * the map grows on demand either way. The content does not depend on it;
 * unused bytes inside pages may (tests use a small map to exercise the
 * growth). */
int ps_shard_writer_open_map(ps_shard_writer **out, const char *path, size_t initial_map,
                             ps_error *err);
/* Appends a block; keys must come in increasing (bucket, seq) order
 * (PS_EINVAL otherwise, naming both keys). */
int ps_shard_writer_put(ps_shard_writer *w, uint32_t bucket, uint32_t seq, const void *block,
                        size_t len, ps_error *err);
/* Stores `meta_json` under meta/format, commits, writes the file compacted
 * (deterministic bytes), fsyncs it and frees the writer. Returns 0 or
 * PS_EIO (and removes the file). */
int ps_shard_writer_finish(ps_shard_writer *w, const char *meta_json, ps_error *err);
/* As ps_shard_writer_finish, and the file's SHA-256 (64 hex digits and a
 * NUL) and size come back in sha256 and *bytes (if not NULL): the copy is
 * hashed on its way to the file (ps_hashed_sink_run) rather than read back. */
int ps_shard_writer_finish_hashed(ps_shard_writer *w, const char *meta_json, char sha256[65],
                                  uint64_t *bytes, ps_error *err);
/* As ps_shard_writer_open_map, for a version 2 shard: the writer also
 * keeps the "lengths" database, and each block put must be followed by its
 * lengths (ps_shard_writer_put_lengths) before the next. */
int ps_shard_writer_open_lengths(ps_shard_writer **out, const char *path, size_t initial_map,
                                 ps_error *err);
/* Stores the record lengths of the block just put at (bucket, seq):
 * lengths[0..n) as little-endian u32. PS_EINVAL when (bucket, seq) is not
 * the last block put or the writer keeps no lengths. */
int ps_shard_writer_put_lengths(ps_shard_writer *w, uint32_t bucket, uint32_t seq,
                                const uint32_t *lengths, size_t n, ps_error *err);
/* Makes the writer keep the "sources" database: each block put must then
 * be followed by its sources (ps_shard_writer_put_sources) before the
 * next, in any order with its lengths. Call it after open, before the
 * first put (PS_EINVAL otherwise). */
int ps_shard_writer_enable_sources(ps_shard_writer *w, ps_error *err);
/* Stores the source index of each record of the block just put at
 * (bucket, seq): src[0..n) as little-endian u16. PS_EINVAL when (bucket,
 * seq) is not the last block put or sources are not enabled. */
int ps_shard_writer_put_sources(ps_shard_writer *w, uint32_t bucket, uint32_t seq,
                                const uint16_t *src, uint32_t n, ps_error *err);
/* Abandons the shard: frees the writer and removes its files. */
void ps_shard_writer_abort(ps_shard_writer *w);
/* For tests: keeps the replay log of every put, as a writer whose map is
 * always nearly full does (shard_writer.c); the bytes written are the
 * same. Call it before the first put. */
void ps_shard_writer_log_always(ps_shard_writer *w);

typedef struct ps_shard ps_shard;

/* Opens a finished shard for reading. The file is never mapped: its
 * LMDB trees are read with pread and checked page by page (ps_lmdb_walk),
 * and each block is read with pread when asked for, so a file truncated
 * while open gives PS_ECORRUPT ("PATH: bucket B block S: the file was
 * truncated while open ..."), never SIGBUS. Checks the meta magic and
 * format version: PS_EVERSION for a newer version, PS_ECORRUPT for a file
 * that is not a shard, is truncated or whose pages are damaged. The
 * block index is built at open and never changes, so ps_shard_read may be
 * called from several threads at once; ps_shard_get/next/foreach/seek
 * share one buffer and one cursor: one thread at a time for those. */
int ps_shard_open(ps_shard **out, const char *path, ps_error *err);
/* The same on a descriptor open for reading, which the shard takes over
 * (closed on failure too); `path` names the file in messages. */
int ps_shard_open_fd(ps_shard **out, int fd, const char *path, ps_error *err);
void ps_shard_close(ps_shard *s);
/* The meta/format JSON text (owned by the shard). */
const char *ps_shard_meta(const ps_shard *s);
/* Reads the block at (bucket, seq) into `out` (reset first; the caller's
 * buffer, so threads may share the shard). Returns 1, 0 if absent, or a
 * negative code (PS_ECORRUPT naming the shard and block when the file
 * was truncated since it was opened). */
int ps_shard_read(const ps_shard *s, uint32_t bucket, uint32_t seq, ps_buf *out, ps_error *err);
/* Fetches the block at (bucket, seq). Returns 1 and sets *data and *len (valid
 * until the shard is closed or the next get/next/foreach on it), 0 if
 * absent, or a negative code. */
int ps_shard_get(ps_shard *s, uint32_t bucket, uint32_t seq, const void **data, size_t *len,
                 ps_error *err);
/* Iterates every block in key order: calls fn for each; stops at the first
 * non-zero return, which it returns. */
int ps_shard_foreach(ps_shard *s,
                     int (*fn)(void *user, uint32_t bucket, uint32_t seq, const void *data,
                               size_t len),
                     void *user, ps_error *err);

/* Positions the shard's cursor before the first block with key >=
 * (bucket, seq), for ps_shard_next; (0, 0) rewinds. Returns 0 or a
 * negative code. */
int ps_shard_seek(ps_shard *s, uint32_t bucket, uint32_t seq, ps_error *err);
/* Steps the cursor: returns 1 and the next block's key and bytes (valid
 * until the next call on this shard), 0 past the last block, or a negative
 * code (PS_ECORRUPT naming the file and the last good key). A fresh shard's
 * cursor starts before the first block. */
int ps_shard_next(ps_shard *s, uint32_t *bucket, uint32_t *seq, const void **data, size_t *len,
                  ps_error *err);
/* Number of blocks in the shard (the entries of its blocks database). */
uint64_t ps_shard_block_count(const ps_shard *s);
/* Format 2 (causal and seq2seq sets): the "lengths" database holds, under
 * each block's key, the block's record lengths as n little-endian u32.
 * Reads those of block (bucket, seq): returns 1 and sets *lengths (host
 * order, valid until the next call of this function on the shard or its
 * close) and *n; 0 when the shard has none for that key (a format-1 shard
 * has none at all); or a negative code (PS_ECORRUPT: a value whose size is
 * not a multiple of 4, or a file truncated since it was opened). One
 * thread at a time per shard, like ps_shard_get. */
int ps_shard_get_lengths(ps_shard *s, uint32_t bucket, uint32_t seq, const uint32_t **lengths,
                         size_t *n, ps_error *err);
/* Entries in the shard's "lengths" database (0 for a format-1 shard). */
size_t ps_shard_lengths_count(const ps_shard *s);
/* Whether the shard has a "lengths" database at all (format 2), even an
 * empty one. */
bool ps_shard_has_lengths_db(const ps_shard *s);
/* The "sources" database: reads the source indices of block (bucket,
 * seq)'s records. Returns 1 and sets *src (host order, valid until the
 * next call of this function on the shard or its close) and *n; 0 when
 * the shard has none for that key (a set of one source has no sources
 * database at all); or a negative code (PS_ECORRUPT: a value of an odd
 * size, or a file truncated since it was opened). One thread at a time
 * per shard, like ps_shard_get. */
int ps_shard_get_sources(ps_shard *s, uint32_t bucket, uint32_t seq, const uint16_t **src,
                         size_t *n, ps_error *err);
/* The same into the caller's buffer (reset first; out->data holds n u16
 * in host order), so threads may share the shard, as ps_shard_read. */
int ps_shard_read_sources(const ps_shard *s, uint32_t bucket, uint32_t seq, ps_buf *out,
                          size_t *n, ps_error *err);
/* Entries in the shard's "sources" database (0 when it has none). */
size_t ps_shard_sources_count(const ps_shard *s);
/* Whether the shard has a "sources" database at all, even an empty one. */
bool ps_shard_has_sources_db(const ps_shard *s);
/* Size of the shard file in bytes, as opened. */
uint64_t ps_shard_file_bytes(const ps_shard *s);

/* ---- LMDB structure check (lmdb_check.c) ---------------------------------- */

/* Where one value of an LMDB file lies: called by ps_lmdb_walk for every
 * entry of the main database (db NULL; kind PS_LMDB_DATABASE when the
 * entry is a named database's record) and of each named database (db and
 * db_len its name), in key order within each tree. key/db point into a
 * page buffer valid during the call. A non-zero return stops the walk
 * and is returned. */
#define PS_LMDB_DATABASE 1u
typedef int (*ps_lmdb_value_fn)(void *user, const char *db, size_t db_len,
                                const unsigned char *key, size_t key_len, uint64_t offset,
                                uint64_t len, unsigned kind);

/* Walks every tree of the LMDB file open on `fd` (a regular file; named
 * `path` in messages), reading each page with pread into its own buffer
 * (nothing is mapped: a file truncated meanwhile is a short read,
 * reported as PS_ECORRUPT, never a signal), and checks each branch, leaf
 * and overflow page against the file (page numbers, bounds, nodes inside
 * their page, every page reached once, depths and counts). Every value
 * found is reported to on_value (may be NULL). Returns 0, PS_ECORRUPT
 * ("PATH: damaged LMDB structure: page N: ..." or "PATH: truncated..."),
 * PS_EVERSION (a meta page of an LMDB data version other than 1: "PATH:
 * LMDB data version V ..."), PS_EIO, PS_ENOMEM or what on_value
 * returned. */
int ps_lmdb_walk(int fd, const char *path, ps_lmdb_value_fn on_value, void *user,
                 ps_error *err);
/* ps_lmdb_walk on the file at `path` without a callback. Returns 0,
 * PS_ECORRUPT, PS_EVERSION, PS_ENOENT or PS_EIO. */
int ps_lmdb_check(const char *path, ps_error *err);

#endif /* PS_SHARDS_H */
