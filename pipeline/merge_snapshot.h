/* pipeline/merge_snapshot.h — a part of a --part build, as merge reads it:
 * one snapshot of its directory, every file open before any is used, the
 * shards checked against the manifest read in the same snapshot. */
#ifndef PS_PIPELINE_MERGE_SNAPSHOT_H
#define PS_PIPELINE_MERGE_SNAPSHOT_H

#include "common/ps_internal.h"
#include "store/inspect.h"

#include <stdint.h>
#include <sys/stat.h>

/* The part's auxiliary files merge copies or adds up. */
enum { PS_SNAP_REJECTS, PS_SNAP_DUPLICATES, PS_SNAP_STATS, PS_SNAP_EXTRAS };

typedef struct ps_part_snap {
    const char *dir;
    size_t index;              /* which part, for messages */
    int dfd;                   /* the directory, opened first; -1 */
    struct stat dir_st;
    struct stat manifest_st;
    char *manifest;            /* manifest.json as read */
    size_t manifest_len;
    size_t n_shards;
    int *fds;                  /* shard k's file, in the manifest's order */
    char **names;              /* its name */
    struct stat *shard_st;     /* each as opened */
    int extra[PS_SNAP_EXTRAS]; /* rejects.jsonl, duplicates.jsonl, stats.json; -1: absent */
    struct stat extra_st[PS_SNAP_EXTRAS];
} ps_part_snap;

/* Opens DIR and reads DIR/manifest.json through it. On PS_ENOENT for the
 * manifest the message says DIR holds no part. Close with
 * ps_part_snap_close whatever it returns. */
int ps_part_snap_open(ps_part_snap *s, const char *dir, size_t index, ps_error *err);

/* Opens the files named in `files` (the n shard file names of the
 * manifest read by ps_part_snap_open) and the auxiliary files through the
 * directory descriptor, then checks that DIR is still the directory the
 * manifest was read from; then reads every shard through its descriptor
 * and checks it against the manifest (ps_set_verify_fds: the blocks,
 * counts, sizes, SHA-256 and the accounting's sums). Returns 0, or a
 * negative code naming the part, the file and what is wrong
 * (PS_ECORRUPT for a part that is not what its manifest says: changed
 * while merge read it, or damaged). */
int ps_part_snap_verify(ps_part_snap *s, const char *const *files, size_t n, ps_error *err);

/* Whether every file of the snapshot is still as it was opened, and DIR
 * still the directory it was read from: PS_ECORRUPT naming the part and
 * what changed when not (a part rebuilt or written while merge read it). */
int ps_part_snap_unchanged(const ps_part_snap *s, ps_error *err);

/* The auxiliary file `which` whole (NULL and 0 when the part has none). */
int ps_part_snap_read_extra(const ps_part_snap *s, int which, char **data, size_t *len,
                            ps_error *err);

/* Appends the auxiliary file `which` to the open descriptor `out` (`out_path`
 * names it in messages); nothing when the part has none. */
int ps_part_snap_append_extra(const ps_part_snap *s, int which, int out, const char *out_path,
                              ps_error *err);

void ps_part_snap_close(ps_part_snap *s);

#endif
