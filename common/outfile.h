/*
 * Output files: every file pairshard writes outside a shard set (clean and
 * tokenize outputs, validate reports, reader states, a stopped build's
 * reports) goes through here, so what the path names is never destroyed:
 *
 *   - absent or a regular file, also through symlinks: written to a
 *     temporary in the directory of the real target, fsynced and renamed
 *     over it -- the file appears whole or not at all, and a symlink stays
 *     a symlink (its target is updated);
 *   - a FIFO, a character device (/dev/null), /dev/fd/N or /dev/stdout:
 *     written straight into, never replaced;
 *   - a directory, socket or block device: refused (PS_EUSAGE);
 *   - "-": stdout.
 *
 * A new file gets 0666 & ~umask (as open(2) would give it); a replaced file
 * keeps its permission bits. Every error names the file and the reason.
 *
 * ps_outputs_check() runs before anything is read: two outputs naming the
 * same file, an output naming an input, or an output inside a shard set
 * is a usage error.
 */
#ifndef PS_COMMON_OUTFILE_H
#define PS_COMMON_OUTFILE_H

#include "pairshard/common.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

struct ps_write_behind;

typedef struct ps_outfile {
    FILE *f;
    char *path;   /* as named, for messages (NULL for stdout) */
    char *target; /* the real file a commit renames over (NULL: written in place) */
    char *tmp;    /* the temporary beside target */
    int write_errno; /* first failed ps_outfile_write */
    uint64_t written;  /* bytes ps_outfile_write took */
    uint64_t kicked;   /* bytes whose writeback was started (a temporary) */
    struct ps_write_behind *wb; /* ps_outfile_write_behind's, or NULL */
} ps_outfile;

/* Opens `path` for writing. 0, or PS_EUSAGE (a path that cannot be an
 * output) / PS_EIO with `err` naming the file. */
int ps_outfile_open(ps_outfile *o, const char *path, ps_error *err);
/* Writes n bytes. 0, or PS_EIO naming the file and the reason. Every
 * 4 MiB written to a temporary, its writeback is started
 * (sync_file_range), so the commit's fsync waits for the tail only. Not
 * for two threads at once on one outfile (the stream is written unlocked). */
int ps_outfile_write(ps_outfile *o, const void *p, size_t n, ps_error *err);
/* From now on ps_outfile_write copies into 1 MiB buffers that a thread of
 * the outfile's own writes, in order, while the caller goes on (at most
 * 4 MiB queued: a caller that outruns the disk waits). For a caller whose
 * thread is the bottleneck, e.g. the commit of a threaded clean; the bytes
 * written are the same. A failed write is reported by a later
 * ps_outfile_write or by ps_outfile_commit. 0, or PS_EIO (what the
 * stream held could not be written) / PS_ENOMEM (the outfile stays as it
 * was). */
int ps_outfile_write_behind(ps_outfile *o, ps_error *err);
/* Flushes, fsyncs and renames into place (a stream is flushed and closed).
 * 0, or PS_EIO naming the file (the temporary is removed). */
int ps_outfile_commit(ps_outfile *o, ps_error *err);
/* Discards the output (removes the temporary). Safe on an unopened one. */
void ps_outfile_abort(ps_outfile *o);
/* The name messages use: the path, or "stdout". */
const char *ps_outfile_name(const ps_outfile *o);
/* open + write + commit of one buffer. */
int ps_outfile_write_all(const char *path, const void *p, size_t n, ps_error *err);

/* What an output path names, symlinks followed. */
typedef enum { PS_OUT_STDOUT, PS_OUT_FILE, PS_OUT_STREAM } ps_out_kind;
typedef struct ps_out_info {
    ps_out_kind kind;
    char *target;   /* PS_OUT_FILE: the real path (parent resolved), malloc'd */
    bool exists;    /* st is valid */
    struct stat st; /* the file, FIFO, device or stdout as it is now */
} ps_out_info;

/* Classifies `path`. 0, or PS_EUSAGE (a directory, socket, block device,
 * a missing parent directory, a symlink loop) / PS_ENOMEM. Free
 * info->target. */
int ps_out_classify(const char *path, ps_out_info *info, ps_error *err);

/* One path a command names, with the option that named it ("-o",
 * "--rejects", "input") for messages. */
typedef struct ps_path_use {
    const char *what;
    const char *path;
} ps_path_use;

/* Refuses (PS_EUSAGE, `err` naming both paths) outputs that cannot be
 * written safely: a directory, socket or block device; two outputs naming
 * the same file (character devices and stdout may take several); an output
 * naming an input (also through a symlink or a hard link); an output inside
 * a shard set (a directory holding pairshard's manifest.json). Paths that
 * are NULL are skipped; "-" among the inputs is stdin. */
int ps_outputs_check(const ps_path_use *outs, size_t n_outs, const ps_path_use *ins,
                     size_t n_ins, ps_error *err);

#endif
