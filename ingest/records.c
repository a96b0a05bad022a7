/*
 * Splitting a decoded byte stream into raw records, without parsing them:
 *   JSONL  one record per line (CRLF tolerated, blank lines skipped)
 *   JSON   one record per element of a top-level array, found by a small
 *          scanner that tracks strings and nesting, so that one malformed
 *          element is one rejected record and a 2 GB array is never held in
 *          memory at once
 *   CSV/TSV  one record per row (RFC 4180 quoting; quoted fields may hold
 *          newlines); the first row is the header
 * A record longer than max_record_bytes is skipped to its end while only a
 * prefix is kept, so a 10 MiB line costs no more memory than a short one.
 */
#define _GNU_SOURCE /* memrchr */
#include "ingest/ingest.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK (64 * 1024)
#define PREFIX_KEEP PS_RECORD_PREFIX_KEEP

typedef enum { J_START, J_ELEMENTS, J_AFTER, J_DONE } json_phase;

struct ps_record_reader {
    ps_source *src;
    ps_format fmt;
    size_t max;
    char *buf;
    size_t cap, start, end; /* pending bytes: buf[start..end) */
    bool eof;
    uint64_t line;          /* line of buf[start] (1-based) */
    uint64_t index;
    uint64_t blank_lines;
    ps_buf prefix;          /* kept prefix of a too-long record */
    /* scanner state, kept across refills */
    size_t scan;            /* next byte to scan, absolute in buf */
    uint64_t scan_line;     /* line at `scan` */
    bool in_str, esc;       /* JSON */
    int depth;
    bool in_q, just_closed, field_start; /* CSV */
    json_phase jphase;
    bool json_missing_comma;
    /* CSV header and field splitting */
    bool header_done;
    char **cols;
    size_t ncols;
};

int ps_record_reader_create(ps_record_reader **out, ps_source *src, ps_format format,
                            size_t max_record_bytes, ps_error *err)
{
    *out = NULL;
    ps_record_reader *r = calloc(1, sizeof *r);
    if (!r)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    r->src = src;
    r->fmt = format;
    r->max = max_record_bytes ? max_record_bytes : 1;
    r->cap = READ_CHUNK * 2;
    r->buf = malloc(r->cap);
    if (!r->buf) {
        free(r);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    r->line = r->scan_line = 1;
    r->field_start = true;
    ps_buf_init(&r->prefix);
    *out = r;
    return 0;
}

void ps_record_reader_free(ps_record_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncols; i++)
        free(r->cols[i]);
    free(r->cols);
    ps_buf_free(&r->prefix);
    free(r->buf);
    free(r);
}

uint64_t ps_record_reader_blank_lines(const ps_record_reader *r) { return r->blank_lines; }

size_t ps_record_reader_max(const ps_record_reader *r) { return r->max; }

bool ps_record_reader_at_line(const ps_record_reader *r, uint64_t *pending, uint64_t *line)
{
    *pending = r->end - r->start;
    *line = r->line;
    return r->fmt == PS_FORMAT_JSONL && (r->line > 1 || r->index > 0);
}

/* Moves pending bytes to the front and reads more. Returns bytes read (0 at
 * end of input) or a negative code. */
static ssize_t refill(ps_record_reader *r, ps_error *err)
{
    if (r->eof)
        return 0;
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->scan -= r->start;
        r->end -= r->start;
        r->start = 0;
    }
    if (r->cap - r->end < READ_CHUNK) {
        size_t ncap = r->cap * 2;
        char *nb = realloc(r->buf, ncap);
        if (!nb)
            return ps_error_set(err, PS_ENOMEM, "%s: out of memory reading a record",
                                ps_source_path(r->src));
        r->buf = nb;
        r->cap = ncap;
    }
    ssize_t got = ps_source_read(r->src, r->buf + r->end, r->cap - r->end, err);
    if (got < 0)
        return got;
    if (got == 0)
        r->eof = true;
    r->end += (size_t)got;
    return got;
}

/* Drops the pending bytes of a too-long record, keeping a prefix first. */
static void spill_prefix(ps_record_reader *r)
{
    size_t have = r->prefix.len;
    if (have < PREFIX_KEEP) {
        size_t take = r->scan - r->start;
        if (take > PREFIX_KEEP - have)
            take = PREFIX_KEEP - have;
        ps_buf_append(&r->prefix, r->buf + r->start, take);
    }
    r->start = r->scan;
}

/* Scans buf[scan..end) for the end of the current record. Returns the
 * offset of the terminator, or (size_t)-1 when more input is needed. */
static size_t scan_terminator(ps_record_reader *r, char *term)
{
    const char *b = r->buf;
    size_t i = r->scan, end = r->end;
    if (r->fmt == PS_FORMAT_JSONL) {
        const char *nl = memchr(b + i, '\n', end - i);
        r->scan = nl ? (size_t)(nl - b) : end;
        if (nl) {
            *term = '\n';
            return r->scan;
        }
        return (size_t)-1;
    }
    if (r->fmt == PS_FORMAT_JSON) {
        for (; i < end; i++) {
            char c = b[i];
            if (c == '\n')
                r->scan_line++;
            if (r->in_str) {
                if (r->esc)
                    r->esc = false;
                else if (c == '\\')
                    r->esc = true;
                else if (c == '"')
                    r->in_str = false;
                continue;
            }
            if (c == '"') {
                r->in_str = true;
            } else if (c == '{' || c == '[') {
                r->depth++;
            } else if (c == '}' || c == ']') {
                if (r->depth == 0 && c == ']') {
                    *term = c;
                    r->scan = i;
                    return i;
                }
                if (r->depth > 0)
                    r->depth--;
            } else if (c == ',' && r->depth == 0) {
                *term = c;
                r->scan = i;
                return i;
            }
        }
        r->scan = end;
        return (size_t)-1;
    }
    /* CSV / TSV */
    char delim = r->fmt == PS_FORMAT_TSV ? '\t' : ',';
    for (; i < end; i++) {
        char c = b[i];
        if (c == '"') {
            if (r->in_q) {
                r->in_q = false;
                r->just_closed = true;
            } else if (r->field_start || r->just_closed) {
                r->in_q = true;
                r->just_closed = false;
            }
            r->field_start = false;
            continue;
        }
        r->just_closed = false;
        if (r->in_q) {
            if (c == '\n')
                r->scan_line++;
            continue;
        }
        if (c == '\n') {
            *term = c;
            r->scan = i;
            return i;
        }
        r->field_start = c == delim;
    }
    r->scan = end;
    return (size_t)-1;
}

static void reset_scan_state(ps_record_reader *r)
{
    r->in_str = r->esc = false;
    r->depth = 0;
    r->in_q = r->just_closed = false;
    r->field_start = true;
}

static bool is_json_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Skips JSON whitespace (and a BOM at the very start). Returns the next
 * byte, or -1 at end of input, or a negative-below-minus-one code. */
static int json_skip_ws(ps_record_reader *r, ps_error *err, int *out)
{
    for (;;) {
        while (r->start < r->end && is_json_ws(r->buf[r->start])) {
            if (r->buf[r->start] == '\n')
                r->line++;
            r->start++;
        }
        if (r->start < r->end) {
            *out = (unsigned char)r->buf[r->start];
            return 0;
        }
        r->scan = r->start;
        ssize_t got = refill(r, err);
        if (got < 0)
            return (int)got;
        if (got == 0) {
            *out = -1;
            return 0;
        }
    }
}

/* Reads bytes until the current record's terminator; on success *rec_end
 * is the terminator's offset (or end at EOF) and *found says whether a
 * terminator was found. Handles too-long records by spilling. */
static int read_to_terminator(ps_record_reader *r, size_t *rec_end, char *term, bool *found,
                              ps_error *err)
{
    r->scan = r->start;
    r->scan_line = r->line;
    ps_buf_reset(&r->prefix);
    bool spilled = false;
    for (;;) {
        size_t t = scan_terminator(r, term);
        if (t != (size_t)-1) {
            *rec_end = t;
            *found = true;
            return (spilled || t - r->start > r->max) ? 1 : 0;
        }
        if (r->scan - r->start + r->prefix.len > r->max || spilled) {
            spill_prefix(r);
            spilled = true;
        }
        ssize_t got = refill(r, err);
        if (got < 0)
            return (int)got;
        if (got == 0) {
            *rec_end = r->end;
            *found = false;
            return (spilled || r->end - r->start > r->max) ? 1 : 0;
        }
    }
}

static void fill_record(ps_record_reader *r, ps_raw_record *rec, size_t rec_end, bool too_long)
{
    memset(rec, 0, sizeof *rec);
    rec->line = r->line;
    rec->index = r->index++;
    if (too_long) {
        size_t room = PREFIX_KEEP > r->prefix.len ? PREFIX_KEEP - r->prefix.len : 0;
        size_t take = rec_end - r->start < room ? rec_end - r->start : room;
        ps_buf_append(&r->prefix, r->buf + r->start, take);
        rec->data = r->prefix.data ? r->prefix.data : "";
        rec->len = r->prefix.len;
        rec->too_long = true;
    } else {
        rec->data = r->buf + r->start;
        rec->len = rec_end - r->start;
    }
}

static bool is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_json_ws(p[i]))
            return false;
    return true;
}

static int next_line_record(ps_record_reader *r, ps_raw_record *rec, ps_error *err)
{
    for (;;) {
        reset_scan_state(r);
        if (r->start == r->end) {
            ssize_t got = refill(r, err);
            if (got < 0)
                return (int)got;
            if (got == 0)
                return 0;
        }
        size_t rec_end;
        char term;
        bool found;
        int rc = read_to_terminator(r, &rec_end, &term, &found, err);
        if (rc < 0)
            return rc;
        bool too_long = rc == 1;
        size_t len = rec_end - r->start;
        bool unterminated_q = r->fmt != PS_FORMAT_JSONL && r->in_q && !found;
        /* Strip the CR of a CRLF, and a BOM on the first line. */
        if (!too_long && len > 0 && r->buf[rec_end - 1] == '\r')
            len--;
        if (r->line == 1 && r->index == 0 && !r->header_done && len >= 3 &&
            memcmp(r->buf + r->start, "\xEF\xBB\xBF", 3) == 0) {
            r->start += 3;
            len -= 3;
        }
        uint64_t lines_in_record = r->scan_line - r->line;
        if (!too_long && is_blank(r->buf + r->start, len)) {
            if (!(found || len > 0)) /* nothing left at all */
                return 0;
            r->blank_lines++;
            r->line += 1 + lines_in_record;
            r->start = found ? rec_end + 1 : rec_end;
            continue;
        }
        fill_record(r, rec, r->start + len, too_long);
        if (unterminated_q) {
            rec->error_reason = "bad_csv";
            snprintf(rec->error_detail, sizeof rec->error_detail,
                     "quoted field is not closed before the end of the input");
        }
        r->line += 1 + lines_in_record;
        r->start = found ? rec_end + 1 : rec_end;
        return 1;
    }
}

static int next_json_element(ps_record_reader *r, ps_raw_record *rec, ps_error *err)
{
    int c, rc;
    for (;;) {
        switch (r->jphase) {
        case J_START:
            rc = json_skip_ws(r, err, &c);
            if (rc)
                return rc;
            if (c == 0xEF && r->end - r->start >= 3 &&
                memcmp(r->buf + r->start, "\xEF\xBB\xBF", 3) == 0) {
                r->start += 3;
                continue;
            }
            if (c == -1) { /* empty input: no records */
                r->jphase = J_DONE;
                return 0;
            }
            if (c != '[')
                return ps_error_set(err, PS_EFORMAT,
                                    "%s:%llu: expected a JSON array ('['), found '%c'",
                                    ps_source_path(r->src), (unsigned long long)r->line,
                                    c >= 0x20 && c < 0x7F ? c : '?');
            r->start++;
            r->jphase = J_ELEMENTS;
            continue;
        case J_ELEMENTS: {
            rc = json_skip_ws(r, err, &c);
            if (rc)
                return rc;
            if (c == -1) {
                r->jphase = J_DONE;
                return 0; /* unclosed array after a complete element */
            }
            if (c == ']') {
                r->start++;
                r->jphase = J_AFTER;
                continue;
            }
            reset_scan_state(r);
            size_t rec_end;
            char term;
            bool found;
            rc = read_to_terminator(r, &rec_end, &term, &found, err);
            if (rc < 0)
                return rc;
            size_t e = rec_end;
            while (e > r->start && is_json_ws(r->buf[e - 1]))
                e--;
            fill_record(r, rec, e, rc == 1);
            if (!found) {
                rec->error_reason = "bad_json";
                snprintf(rec->error_detail, sizeof rec->error_detail,
                         "input ends inside array element %llu (truncated file?)",
                         (unsigned long long)rec->index);
                r->jphase = J_DONE;
            } else if (e == r->start && !rec->too_long) {
                rec->error_reason = "bad_json";
                snprintf(rec->error_detail, sizeof rec->error_detail,
                         "empty array element (stray ',')");
            }
            r->line = r->scan_line;
            r->start = found ? rec_end + (term == ',' ? 1 : 0) : rec_end;
            return 1;
        }
        case J_AFTER: {
            rc = json_skip_ws(r, err, &c);
            if (rc)
                return rc;
            r->jphase = J_DONE;
            if (c == -1)
                return 0;
            /* Trailing bytes after the array are reported, not ignored. */
            reset_scan_state(r);
            r->fmt = PS_FORMAT_JSONL; /* take the rest up to the next newline */
            r->scan = r->start;
            size_t rec_end;
            char term;
            bool found;
            rc = read_to_terminator(r, &rec_end, &term, &found, err);
            r->fmt = PS_FORMAT_JSON;
            if (rc < 0)
                return rc;
            fill_record(r, rec, rec_end, rc == 1);
            rec->error_reason = "bad_json";
            snprintf(rec->error_detail, sizeof rec->error_detail,
                     "data after the end of the top-level JSON array");
            r->start = r->end; /* the rest of the input is discarded with it */
            r->eof = true;
            return 1;
        }
        case J_DONE:
            return 0;
        }
    }
}

void ps_csv_row_init(ps_csv_row *row) { memset(row, 0, sizeof *row); }

void ps_csv_row_free(ps_csv_row *row)
{
    ps_buf_free(&row->buf);
    free(row->fields);
    free(row->lens);
    free(row->offs);
    memset(row, 0, sizeof *row);
}

int ps_csv_split(ps_csv_row *row, char delim, const char *p, size_t n)
{
    ps_buf_reset(&row->buf);
    /* content <= n bytes, plus one NUL per field (<= delimiters + 1) */
    if (ps_buf_reserve(&row->buf, n + 1))
        return PS_ENOMEM;
    char *o = row->buf.data;
    size_t len = 0, nf = 0, i = 0;
    for (;;) {
        size_t fstart = len;
        if (i < n && p[i] == '"') {
            i++;
            while (i < n) {
                if (p[i] == '"') {
                    if (i + 1 < n && p[i + 1] == '"') {
                        o[len++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                o[len++] = p[i++];
            }
            /* text between the closing quote and the delimiter is kept */
            while (i < n && p[i] != delim)
                o[len++] = p[i++];
        } else {
            while (i < n && p[i] != delim)
                o[len++] = p[i++];
        }
        if (nf == row->cap) {
            size_t ncap = row->cap ? row->cap * 2 : 16;
            size_t *no = realloc(row->offs, ncap * 2 * sizeof *no);
            if (!no)
                return PS_ENOMEM;
            row->offs = no;
            row->cap = ncap;
        }
        row->offs[2 * nf] = fstart;
        row->offs[2 * nf + 1] = len - fstart;
        nf++;
        o[len++] = '\0'; /* each field a C string */
        if (i >= n)
            break;
        i++; /* the delimiter */
    }
    row->buf.len = len;
    if (nf > row->fields_cap) {
        const char **nfp = realloc(row->fields, nf * sizeof *nfp);
        if (!nfp)
            return PS_ENOMEM;
        row->fields = nfp;
        size_t *nl = realloc(row->lens, nf * sizeof *nl);
        if (!nl)
            return PS_ENOMEM;
        row->lens = nl;
        row->fields_cap = nf;
    }
    for (size_t k = 0; k < nf; k++) {
        row->fields[k] = o + row->offs[2 * k];
        row->lens[k] = row->offs[2 * k + 1];
    }
    row->n = nf;
    return 0;
}

char ps_format_delimiter(ps_format f) { return f == PS_FORMAT_TSV ? '\t' : ','; }

static int read_header(ps_record_reader *r, ps_error *err)
{
    ps_raw_record hdr;
    int rc = next_line_record(r, &hdr, err);
    r->header_done = true;
    if (rc <= 0)
        return rc; /* empty input: no header and no records */
    const char *path = ps_source_path(r->src);
    if (hdr.too_long || hdr.error_reason)
        return ps_error_set(err, PS_EFORMAT, "%s:1: unusable header row (%s)", path,
                            hdr.too_long ? "too long" : hdr.error_detail);
    ps_csv_row row;
    ps_csv_row_init(&row);
    if (ps_csv_split(&row, ps_format_delimiter(r->fmt), hdr.data, hdr.len)) {
        ps_csv_row_free(&row);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    r->cols = calloc(row.n, sizeof *r->cols);
    if (!r->cols) {
        ps_csv_row_free(&row);
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    }
    r->ncols = row.n;
    for (size_t i = 0; i < r->ncols; i++)
        r->cols[i] = strndup(row.fields[i], row.lens[i]);
    ps_csv_row_free(&row);
    for (size_t i = 0; i < r->ncols; i++) {
        if (!r->cols[i])
            return ps_error_set(err, PS_ENOMEM, "out of memory");
        if (ps_utf8_check(r->cols[i], strlen(r->cols[i])) != strlen(r->cols[i]))
            return ps_error_set(err, PS_EFORMAT, "%s:1: header column %zu is not valid UTF-8",
                                path, i + 1);
        for (size_t j = 0; j < i; j++)
            if (strcmp(r->cols[i], r->cols[j]) == 0)
                return ps_error_set(err, PS_EFORMAT, "%s:1: header names column '%s' twice",
                                    path, r->cols[i]);
    }
    r->index = 0; /* the header is not a record */
    return 1;
}

int ps_record_reader_next(ps_record_reader *r, ps_raw_record *rec, ps_error *err)
{
    if (r->fmt == PS_FORMAT_JSON)
        return next_json_element(r, rec, err);
    if ((r->fmt == PS_FORMAT_CSV || r->fmt == PS_FORMAT_TSV) && !r->header_done) {
        int rc = read_header(r, err);
        if (rc <= 0)
            return rc;
    }
    return next_line_record(r, rec, err);
}

/* Newlines in p[0..n): the reader counts the lines it hands over whole so
 * that the next record's line number stays exact. memchr from one to the
 * next beats a byte or word loop by 4x on text lines of a few hundred
 * bytes (it is vectorised and skips a line in a few steps). */
static uint64_t count_newlines(const char *p, size_t n)
{
    uint64_t count = 0;
    for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
        count++;
    return count;
}

/* The offset just past the `k`-th newline of p[0..n) (k >= 1; it is there). */
static size_t past_newline(const char *p, size_t n, uint64_t k)
{
    const char *q = p;
    for (; k > 0; k--)
        q = (const char *)memchr(q, '\n', n - (size_t)(q - p)) + 1;
    return (size_t)(q - p);
}

int ps_record_reader_take_lines(ps_record_reader *r, ps_buf *dst, size_t want_bytes,
                                size_t max_lines, uint64_t *first_line, ps_error *err)
{
    *first_line = r->line;
    if (r->fmt != PS_FORMAT_JSONL || (r->line == 1 && r->index == 0) || !max_lines)
        return 0; /* the first line may start with a BOM: ps_record_reader_next's */
    size_t lines = 0, taken = 0;
    while (taken < want_bytes && lines < max_lines) {
        if (r->start == r->end) {
            r->scan = r->start;
            ssize_t got = refill(r, err);
            if (got <= 0) {
                if (got < 0)
                    return (int)got;
                break;
            }
        }
        /* Only bytes that end in a newline no further than max_record_bytes
         * from here: then no line among them is too long. */
        size_t avail = r->end - r->start;
        size_t span = avail < r->max + 1 ? avail : r->max + 1;
        const char *base = r->buf + r->start;
        const char *nl = memrchr(base, '\n', span);
        if (!nl) {
            if (avail > r->max) /* a too-long line: ps_record_reader_next keeps its prefix */
                break;
            r->scan = r->end;
            ssize_t got = refill(r, err);
            if (got < 0)
                return (int)got;
            if (got == 0)
                break; /* a last line without a newline: ps_record_reader_next's */
            continue;
        }
        size_t n = (size_t)(nl - base) + 1;
        uint64_t k = count_newlines(base, n);
        if (lines + k > max_lines) {
            k = max_lines - lines;
            n = past_newline(base, n, k);
        }
        if (ps_buf_append(dst, base, n))
            return ps_error_set(err, PS_ENOMEM, "%s: out of memory reading records",
                                ps_source_path(r->src));
        r->start += n;
        r->scan = r->start;
        r->line += k;
        lines += k;
        taken += n;
    }
    return (int)lines;
}

size_t ps_lines_split(const char *data, size_t len, uint64_t first_line, size_t max,
                      ps_raw_record *recs, size_t cap, uint64_t *blank_lines)
{
    size_t n = 0;
    uint64_t line = first_line;
    for (const char *p = data, *end = data + len; p < end && n < cap; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = (size_t)((nl ? nl : end) - p);
        const char *next = nl ? nl + 1 : end;
        /* as ps_record_reader_next: a line over max is a prefix, CR and all */
        bool too_long = l > max;
        if (too_long && l > PREFIX_KEEP)
            l = PREFIX_KEEP;
        else if (!too_long && l > 0 && p[l - 1] == '\r') /* the CR of a CRLF */
            l--;
        if (!too_long && is_blank(p, l)) {
            (*blank_lines)++;
            p = next;
            continue;
        }
        ps_raw_record *rec = &recs[n];
        memset(rec, 0, offsetof(ps_raw_record, error_detail));
        rec->error_detail[0] = '\0';
        rec->data = p;
        rec->len = l;
        rec->too_long = too_long;
        rec->line = line;
        rec->index = n++; /* within the block: the committing thread knows the rest */
        rec->turn = -1;
        p = next;
    }
    return n;
}

size_t ps_record_reader_columns(const ps_record_reader *r, const char *const **names)
{
    *names = (const char *const *)r->cols;
    return r->ncols;
}

static bool name_ends(const char *path, const char *ext)
{
    static const char *const comp[] = {"", ".gz", ".zst"};
    size_t n = strlen(path);
    for (size_t i = 0; i < 3; i++) {
        size_t m = strlen(ext) + strlen(comp[i]);
        if (n >= m && strncmp(path + n - m, ext, strlen(ext)) == 0 &&
            strcmp(path + n - strlen(comp[i]), comp[i]) == 0)
            return true;
    }
    return false;
}

int ps_format_detect(ps_source *src, ps_format *out, ps_error *err)
{
    const char *p;
    ssize_t n = ps_source_peek(src, &p, 64 * 1024, err);
    if (n < 0)
        return (int)n;
    const char *path = ps_source_path(src);
    size_t i = 0;
    if (n >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        i = 3;
    while (i < (size_t)n && is_json_ws(p[i]))
        i++;
    if (name_ends(path, ".tsv")) {
        *out = PS_FORMAT_TSV;
    } else if (name_ends(path, ".csv")) {
        *out = PS_FORMAT_CSV;
    } else if (name_ends(path, ".jsonl") || name_ends(path, ".ndjson")) {
        *out = PS_FORMAT_JSONL;
    } else if (i == (size_t)n) {
        *out = PS_FORMAT_JSONL; /* empty: any format yields no records */
    } else if (p[i] == '[') {
        *out = PS_FORMAT_JSON;
    } else if (p[i] == '{') {
        *out = PS_FORMAT_JSONL;
    } else if (name_ends(path, ".json")) {
        *out = PS_FORMAT_JSON; /* damaged JSON: let the array reader say why */
    } else {
        /* A header line: choose the delimiter it uses more. */
        size_t tabs = 0, commas = 0;
        for (size_t k = i; k < (size_t)n && p[k] != '\n'; k++) {
            tabs += p[k] == '\t';
            commas += p[k] == ',';
        }
        if (tabs == 0 && commas == 0)
            return ps_error_set(err, PS_EFORMAT,
                                "%s: cannot tell the format (not JSON, and the first line has "
                                "no tab or comma); use --format",
                                path);
        *out = tabs >= commas ? PS_FORMAT_TSV : PS_FORMAT_CSV;
    }
    return 0;
}
