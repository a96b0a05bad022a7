/*
 * Line ranges: a plain JSONL file's lines read by the workers themselves,
 * so that no thread reads the whole input alone.
 *
 * The file is cut into nominal byte ranges without being read. A chunk's
 * lines are those that start in its range, so a worker reads its range
 * (and the byte before it, to see whether the range starts a line) and
 * the rest of its last line, and guesses where its first line starts. The
 * truth comes in input order from the chunk before (the build's chain):
 * where that chunk's last line ended, and the line number there. Only a
 * chunk after one that stopped early reads again: a chunk takes at most
 * PS_RANGE_RECORDS lines and PS_RANGE_BYTES bytes, so a file of very
 * short lines runs over its ranges and extra chunks take what is left.
 *
 * A line longer than max_record_bytes is kept to its first bytes and
 * skipped to its end by scanning, never held whole: the chunk ends there.
 * A file that shrinks while it is read ends where the reads end.
 */
#include "ingest/ingest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCAN_BYTES (64 * 1024) /* a too-long line's rest, scanned in pieces */
#define GROW_BYTES 4096         /* the first read past a range, for its last line */

void ps_line_range_init(ps_line_range *r)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    ps_buf_init(&r->data);
}

void ps_line_range_free(ps_line_range *r)
{
    ps_buf_free(&r->data);
}

/* pread of up to n bytes at off into buf; *got short only at the end of
 * the file. 0 or PS_EIO. */
static int pread_full(const ps_line_range *r, char *buf, size_t n, uint64_t off, size_t *got,
                      ps_error *err)
{
    size_t done = 0;
    while (done < n) {
        ssize_t k = pread(r->fd, buf + done, n - done, (off_t)(off + done));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return ps_error_set(err, PS_EIO, "%s: read failed at byte %llu: %s", r->path,
                                (unsigned long long)(off + done), strerror(errno));
        if (k == 0)
            break;
        done += (size_t)k;
    }
    *got = done;
    return 0;
}

/* The file ended before the size it had when its ranges began. */
static int shrunk(const ps_line_range *r, uint64_t off, ps_error *err)
{
    return ps_error_set(err, PS_EIO, "%s: the file changed while it was read: it ends at byte "
                        "%llu, not %llu", r->path, (unsigned long long)off,
                        (unsigned long long)r->size);
}

/* Appends up to n bytes of the file that follow what data holds, no
 * further than its size (bytes added since are not read); *got what came
 * (0: the end). */
static int extend(ps_line_range *r, size_t n, size_t *got, ps_error *err)
{
    uint64_t off = r->at + r->data.len;
    *got = 0;
    if (off >= r->size)
        return 0;
    if (n > r->size - off)
        n = (size_t)(r->size - off);
    if (ps_buf_reserve(&r->data, r->data.len + n))
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory reading records", r->path);
    int rc = pread_full(r, r->data.data + r->data.len, n, off, got, err);
    if (!rc)
        r->data.len += *got;
    return rc ? rc : *got < n ? shrunk(r, off + *got, err) : 0;
}

/* data := the file's bytes [off, off + n) (fewer at its end). */
static int load(ps_line_range *r, uint64_t off, size_t n, ps_error *err)
{
    ps_buf_reset(&r->data);
    r->at = off;
    size_t got;
    return extend(r, n, &got, err);
}

int ps_line_range_read(ps_line_range *r, uint64_t begin, uint64_t *guess, ps_error *err)
{
    *guess = UINT64_MAX;
    uint64_t lo = begin > 0 ? begin - 1 : 0, hi = r->end < r->size ? r->end : r->size;
    if (lo >= hi)
        return 0;
    int rc = load(r, lo, (size_t)(hi - lo), err);
    if (rc || r->data.len == 0)
        return rc;
    if (begin == 0 || r->data.data[0] == '\n') {
        *guess = begin;
        return 0;
    }
    const char *nl = memchr(r->data.data + 1, '\n', r->data.len - 1);
    if (nl && r->at + (uint64_t)(nl - r->data.data) + 1 < hi)
        *guess = r->at + (uint64_t)(nl - r->data.data) + 1;
    return 0;
}

/* The offset of the first newline at or after `off`, read past data in
 * SCAN_BYTES pieces and not kept; *eof when there is none (then the
 * offset is where the file ends). */
static int scan_to_newline(ps_line_range *r, uint64_t off, uint64_t *nl_at, bool *eof,
                           ps_error *err)
{
    char *buf = malloc(SCAN_BYTES);
    if (!buf)
        return ps_error_set(err, PS_ENOMEM, "%s: out of memory reading records", r->path);
    int rc = 0;
    *eof = false;
    for (;;) {
        size_t got, want = r->size - off < SCAN_BYTES ? (size_t)(r->size - off) : SCAN_BYTES;
        if (want == 0) {
            *nl_at = off;
            *eof = true;
            break;
        }
        if ((rc = pread_full(r, buf, want, off, &got, err)) != 0)
            break;
        if (got < want) {
            rc = shrunk(r, off + got, err);
            break;
        }
        const char *nl = memchr(buf, '\n', got);
        if (nl) {
            *nl_at = off + (uint64_t)(nl - buf);
            break;
        }
        off += got;
    }
    free(buf);
    return rc;
}

/* The line that starts at `pos` (held in data): where it ends (its
 * newline, or the file's end: *eof), and how much of it data holds
 * (*stored: its end + 1, or less for a line cut short). Reads on as
 * needed; a line is kept up to `keep` bytes, the rest scanned. */
static int line_end(ps_line_range *r, uint64_t pos, size_t keep, uint64_t *end, bool *eof,
                    uint64_t *stored, ps_error *err)
{
    *eof = false;
    for (;;) {
        size_t off = (size_t)(pos - r->at), avail = r->data.len - off;
        const char *nl = memchr(r->data.data + off, '\n', avail);
        if (nl) {
            *end = r->at + (uint64_t)(nl - r->data.data);
            *stored = *end + 1;
            return 0;
        }
        if (avail >= keep) { /* too long: the rest is skipped, not kept */
            *stored = r->at + r->data.len;
            return scan_to_newline(r, *stored, end, eof, err);
        }
        /* more of the line: doubling what is held, from GROW_BYTES, so a
         * line just past the range costs a page and a long one a few reads */
        size_t got, step = avail > GROW_BYTES ? avail : GROW_BYTES;
        int rc = extend(r, step < keep - avail ? step : keep - avail, &got, err);
        if (rc)
            return rc;
        if (got == 0) { /* the last line, without a newline */
            *end = *stored = r->at + r->data.len;
            *eof = true;
            return 0;
        }
    }
}

int ps_line_range_take(ps_line_range *r, uint64_t from, size_t max_lines, size_t max_bytes,
                       ps_error *err)
{
    r->from = r->next = r->stored = from;
    r->lines = 0;
    if (from >= r->end || from >= r->size)
        return 0; /* a line of an earlier chunk runs past this range */
    int rc = 0;
    if (from < r->at || from >= r->at + r->data.len) {
        uint64_t left = r->size - from;
        rc = load(r, from, left < max_bytes ? (size_t)left : max_bytes, err);
    }
    /* a line is held up to max + 1 bytes, enough to tell it is too long,
     * and at least the prefix a too-long record keeps */
    size_t keep = r->max < PS_RECORD_PREFIX_KEEP ? PS_RECORD_PREFIX_KEEP
                  : r->max == SIZE_MAX           ? SIZE_MAX
                                                 : r->max + 1;
    uint64_t pos = from;
    while (!rc && pos < r->end && pos < r->size && r->lines < max_lines && pos - from < max_bytes) {
        if (pos == r->at + r->data.len) { /* a load that ended on a line's start */
            size_t got;
            if ((rc = extend(r, SCAN_BYTES, &got, err)) != 0 || got == 0)
                break;
        }
        uint64_t end = pos, stored = pos;
        bool eof = false;
        if ((rc = line_end(r, pos, keep, &end, &eof, &stored, err)) != 0)
            break;
        r->lines++;
        r->stored = stored;
        pos = eof ? end : end + 1;
        if (stored < pos) /* a line cut short ends the chunk: nothing after it is held */
            break;
    }
    r->next = pos;
    return rc;
}

size_t ps_line_range_split(const ps_line_range *r, uint64_t first_line, ps_raw_record *recs,
                           size_t cap, uint64_t *blank_lines)
{
    return ps_lines_split(r->data.data + (r->from - r->at), (size_t)(r->stored - r->from),
                          first_line, r->max, recs, cap, blank_lines);
}
