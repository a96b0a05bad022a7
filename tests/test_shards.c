/* Unit tests of the shard store (store/): the block codec on good and
 * hostile bytes, the LMDB shard writer (key order, deterministic bytes,
 * a growing map) and the reader (format checks, truncation, iteration). */
#define _GNU_SOURCE /* pthread_getaffinity_np */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "store/inspect.h"
#include "store/shards.h"
#include "tests/support/testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* ---- helpers -------------------------------------------------------------- */

typedef struct recset {
    ps_shard_record r[64];
    int32_t ids[64][600];
    char idbuf[64][32];
    size_t n;
} recset;

/* n records with varied lengths (0 included), ids below `max_id`. */
static void make_recs(recset *s, size_t n, uint32_t max_id, uint32_t seed)
{
    assert_true(n <= 64);
    s->n = n;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        uint32_t len = (i == 1) ? 0 : 1 + (x >> 8) % 300;
        for (uint32_t k = 0; k < len; k++) {
            x = x * 1103515245u + 12345u;
            s->ids[i][k] = (int32_t)((x >> 4) % max_id);
        }
        snprintf(s->idbuf[i], sizeof s->idbuf[i], i == 2 ? "" : "rec-%zu", i);
        s->r[i] = (ps_shard_record){.ids = s->ids[i],
                                    .length = len,
                                    .type_boundary = i % 3 == 0 ? len : len / 2,
                                    .label = i % 4 == 0 ? PS_LABEL_NONE : (uint32_t)i % 7,
                                    .id = s->idbuf[i],
                                    .id_len = (uint32_t)strlen(s->idbuf[i])};
    }
}

/* Asserts a decoded view holds exactly the records. */
static void expect_view(const ps_block_view *v, const recset *s, int w)
{
    assert_int_equal(v->n, s->n);
    assert_int_equal(v->id_width, w);
    for (size_t i = 0; i < s->n; i++) {
        const ps_shard_record *r = &s->r[i];
        assert_int_equal(v->length[i], r->length);
        assert_int_equal(v->type_boundary[i], r->type_boundary);
        assert_int_equal(v->label[i], r->label);
        assert_int_equal(v->id_offset[i + 1] - v->id_offset[i], r->id_len);
        assert_memory_equal(v->ids + v->id_offset[i], r->id, r->id_len);
        assert_int_equal(v->token_start[i + 1] - v->token_start[i], r->length);
        for (uint32_t k = 0; k < r->length; k++)
            assert_int_equal(ps_block_token(v, v->token_start[i] + k), (uint32_t)r->ids[k]);
    }
}

/* Same content as the records, without asserting (for the mutation test). */
static int view_equals(const ps_block_view *v, const recset *s, int w)
{
    if (v->n != s->n || v->id_width != w)
        return 0;
    for (size_t i = 0; i < s->n; i++) {
        const ps_shard_record *r = &s->r[i];
        if (v->length[i] != r->length || v->type_boundary[i] != r->type_boundary ||
            v->label[i] != r->label || v->id_offset[i + 1] - v->id_offset[i] != r->id_len ||
            memcmp(v->ids + v->id_offset[i], r->id, r->id_len))
            return 0;
        for (uint32_t k = 0; k < r->length; k++)
            if (ps_block_token(v, v->token_start[i] + k) != (uint32_t)r->ids[k])
                return 0;
    }
    return 1;
}

static char *tmp_path(const char *name)
{
    const char *dir = getenv("TMPDIR");
    char *p = malloc(4096);
    assert_non_null(p);
    snprintf(p, 4096, "%s/pstest-shards-%ld-%s", dir && *dir ? dir : "/tmp", (long)getpid(), name);
    unlink(p);
    return p;
}

static void write_all(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* ---- blocks ------------------------------------------------------------- */

static void roundtrip(size_t n, int w, uint32_t max_id)
{
    recset *s = calloc(1, sizeof *s);
    make_recs(s, n, max_id, (uint32_t)(n * 7 + (size_t)w));
    ps_buf out, scratch;
    ps_buf_init(&out);
    ps_buf_init(&scratch);
    ps_error err;
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    assert_int_equal(ps_block_encode(s->r, s->n, w, 3, cc, &out, &err), 0);
    ps_block_view v;
    int rc = ps_block_decode(out.data, out.len, dc, &scratch, &v, &err);
    if (rc)
        fail_msg("decode: %s", err.message);
    expect_view(&v, s, w);
    /* NULL contexts work too, and give the same bytes. */
    ps_buf again;
    ps_buf_init(&again);
    assert_int_equal(ps_block_encode(s->r, s->n, w, 3, NULL, &again, &err), 0);
    assert_int_equal(again.len, out.len);
    assert_memory_equal(again.data, out.data, out.len);
    assert_int_equal(ps_block_decode(again.data, again.len, NULL, &scratch, &v, &err), 0);
    expect_view(&v, s, w);
    ps_buf_free(&again);
    ps_buf_free(&out);
    ps_buf_free(&scratch);
    ZSTD_freeCCtx(cc);
    ZSTD_freeDCtx(dc);
    free(s);
}

static void test_block_roundtrip_u16(void **state)
{
    (void)state;
    roundtrip(64, 2, 30522);
    roundtrip(1, 2, 65536); /* ids up to 65535 */
    roundtrip(5, 2, 7);
}

static void test_block_roundtrip_u32(void **state)
{
    (void)state;
    roundtrip(64, 4, 250000);
    roundtrip(3, 4, 0x7FFFFFFF);
}

static void test_block_zero_records(void **state)
{
    (void)state;
    roundtrip(0, 2, 10);
    roundtrip(0, 4, 10);
}

static void test_block_single_sequence_and_empty_ids(void **state)
{
    (void)state;
    int32_t ids[3] = {101, 7592, 102};
    ps_shard_record r[2] = {
        {.ids = ids, .length = 3, .type_boundary = 3, .label = PS_LABEL_NONE, .id = "", .id_len = 0},
        {.ids = NULL, .length = 0, .type_boundary = 0, .label = 0, .id = NULL, .id_len = 0},
    };
    ps_buf out, scratch;
    ps_buf_init(&out);
    ps_buf_init(&scratch);
    ps_error err;
    assert_int_equal(ps_block_encode(r, 2, 2, 1, NULL, &out, &err), 0);
    ps_block_view v;
    assert_int_equal(ps_block_decode(out.data, out.len, NULL, &scratch, &v, &err), 0);
    assert_int_equal(v.n, 2);
    assert_int_equal(v.type_boundary[0], 3);
    assert_int_equal(v.label[0], PS_LABEL_NONE);
    assert_int_equal(v.id_offset[2], 0);
    assert_int_equal(v.token_start[2], 3);
    assert_int_equal(ps_block_token(&v, 1), 7592);
    /* ids bytes of odd length: the token array is still aligned */
    r[0].id = "abc";
    r[0].id_len = 3;
    assert_int_equal(ps_block_encode(r, 1, 4, 1, NULL, &out, &err), 0);
    assert_int_equal(ps_block_decode(out.data, out.len, NULL, &scratch, &v, &err), 0);
    assert_int_equal(((uintptr_t)v.tokens) % 4, 0);
    assert_int_equal(ps_block_token(&v, 2), 102);
    ps_buf_free(&out);
    ps_buf_free(&scratch);
}

static void test_block_encode_rejects(void **state)
{
    (void)state;
    int32_t big[1] = {70000}, neg[1] = {-1};
    ps_shard_record r = {.ids = big, .length = 1, .type_boundary = 1, .label = 0, .id = "x", .id_len = 1};
    ps_buf out;
    ps_buf_init(&out);
    ps_error err;
    assert_int_equal(ps_block_encode(&r, 1, 2, 3, NULL, &out, &err), PS_ERANGE);
    assert_non_null(strstr(err.message, "70000"));
    assert_int_equal(ps_block_encode(&r, 1, 4, 3, NULL, &out, &err), 0);
    r.ids = neg;
    assert_int_equal(ps_block_encode(&r, 1, 4, 3, NULL, &out, &err), PS_ERANGE);
    r.ids = big;
    assert_int_equal(ps_block_encode(&r, 1, 3, 3, NULL, &out, &err), PS_EINVAL);
    r.type_boundary = 2;
    assert_int_equal(ps_block_encode(&r, 1, 4, 3, NULL, &out, &err), PS_EINVAL);
    ps_buf_free(&out);
}

/* Every single-byte change of a small block decodes to the original
 * content or fails with PS_ECORRUPT; truncations always fail. */
static void test_block_mutations(void **state)
{
    (void)state;
    recset *s = calloc(1, sizeof *s);
    make_recs(s, 4, 30522, 3);
    s->r[0].length = 5; /* keep it small: every byte is tried 3 ways */
    s->r[0].type_boundary = 2;
    s->r[3].length = 7;
    s->r[3].type_boundary = 7;
    ps_buf out, scratch;
    ps_buf_init(&out);
    ps_buf_init(&scratch);
    ps_error err;
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    for (int w = 2; w <= 4; w += 2) {
        assert_int_equal(ps_block_encode(s->r, s->n, w, 3, NULL, &out, &err), 0);
        unsigned char *b = malloc(out.len);
        size_t nbad = 0;
        for (size_t i = 0; i < out.len; i++) {
            static const unsigned char flips[3] = {0x01, 0x80, 0xFF};
            for (int f = 0; f < 3; f++) {
                memcpy(b, out.data, out.len);
                b[i] ^= flips[f];
                ps_block_view v;
                int rc = ps_block_decode(b, out.len, dc, &scratch, &v, &err);
                if (rc == 0) {
                    if (!view_equals(&v, s, w))
                        fail_msg("byte %zu ^ 0x%02x decoded to different content", i, flips[f]);
                } else {
                    assert_int_equal(rc, PS_ECORRUPT);
                    assert_true(err.message[0] != '\0');
                    nbad++;
                }
            }
        }
        assert_true(nbad > 0);
        for (size_t cut = 0; cut < out.len; cut++) {
            ps_block_view v;
            assert_int_equal(ps_block_decode(out.data, cut, dc, &scratch, &v, &err), PS_ECORRUPT);
        }
        /* trailing garbage */
        memcpy(b, out.data, out.len);
        ps_buf big;
        ps_buf_init(&big);
        ps_buf_append(&big, out.data, out.len);
        ps_buf_putc(&big, 0);
        ps_block_view v;
        assert_int_equal(ps_block_decode(big.data, big.len, dc, &scratch, &v, &err), PS_ECORRUPT);
        ps_buf_free(&big);
        free(b);
    }
    ZSTD_freeDCtx(dc);
    ps_buf_free(&out);
    ps_buf_free(&scratch);
    free(s);
}

/* Compresses arbitrary content as a proper frame (checksum on). */
static size_t frame_of(const void *content, size_t n, unsigned char *dst, size_t cap)
{
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    size_t z = ZSTD_compress2(cc, dst, cap, content, n);
    ZSTD_freeCCtx(cc);
    assert_false(ZSTD_isError(z));
    return z;
}

static void expect_corrupt(const void *frame, size_t len, const char *needle)
{
    ps_buf scratch;
    ps_buf_init(&scratch);
    ps_error err;
    ps_block_view v;
    int rc = ps_block_decode(frame, len, NULL, &scratch, &v, &err);
    if (rc != PS_ECORRUPT)
        fail_msg("expected PS_ECORRUPT (%s), got %d", needle, rc);
    if (!strstr(err.message, needle))
        fail_msg("message '%s' does not mention '%s'", err.message, needle);
    /* nothing big was allocated for a refused frame */
    assert_true(scratch.cap < ((size_t)1 << 20));
    ps_buf_free(&scratch);
}

/* Well-formed frames whose content lies. */
static void test_block_hostile_content(void **state)
{
    (void)state;
    unsigned char c[256], f[512];
    memset(c, 0, sizeof c);
    memcpy(c, "PSB1", 4);
    /* n = 2^32-1 records in a 64-byte content */
    c[4] = c[5] = c[6] = c[7] = 0xFF;
    c[8] = 2;
    expect_corrupt(f, frame_of(c, 64, f, sizeof f), "records");
    /* id width 3 */
    memset(c + 4, 0, 4);
    c[8] = 3;
    expect_corrupt(f, frame_of(c, 64, f, sizeof f), "id width");
    /* bad magic */
    c[8] = 2;
    c[3] = '2';
    expect_corrupt(f, frame_of(c, 64, f, sizeof f), "magic");
    c[3] = '1';
    /* n = 1: length[0] = 1000 tokens in a tiny block */
    c[4] = 1;
    c[12] = 0xE8, c[13] = 0x03;
    expect_corrupt(f, frame_of(c, 12 + 20 + 2, f, sizeof f), "do not fill");
    /* type boundary past the length */
    c[12] = 1, c[13] = 0;
    c[16] = 2;
    expect_corrupt(f, frame_of(c, 12 + 20 + 2, f, sizeof f), "type boundary");
    c[16] = 1;
    /* id offsets: first not 0, then decreasing, then past the end */
    c[24] = 1;
    expect_corrupt(f, frame_of(c, 12 + 20 + 2, f, sizeof f), "offsets");
    c[24] = 0;
    c[28] = 0xFF, c[29] = 0xFF;
    expect_corrupt(f, frame_of(c, 12 + 20 + 2, f, sizeof f), "past the block");
    c[28] = 0, c[29] = 0;
    /* this one is valid: one record of 1 token */
    ps_buf scratch;
    ps_buf_init(&scratch);
    ps_block_view v;
    ps_error err;
    size_t z = frame_of(c, 12 + 20 + 2, f, sizeof f);
    assert_int_equal(ps_block_decode(f, z, NULL, &scratch, &v, &err), 0);
    assert_int_equal(v.n, 1);
    ps_buf_free(&scratch);
    /* nonzero header padding */
    c[9] = 1;
    expect_corrupt(f, frame_of(c, 12 + 20 + 2, f, sizeof f), "padding");
    c[9] = 0;
    /* a frame without a checksum */
    z = ZSTD_compress(f, sizeof f, c, 12 + 20 + 2, 3);
    expect_corrupt(f, z, "checksum");
    /* a frame without a content size (streamed) */
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
    ZSTD_outBuffer ob = {f, sizeof f, 0};
    ZSTD_inBuffer ib = {c, 34, 0};
    ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end);
    ZSTD_freeCCtx(cc);
    expect_corrupt(f, ob.pos, "content size");
    expect_corrupt("", 0, "zstd");
    expect_corrupt("PSB1", 4, "zstd");
}

/* A 20-byte frame claiming a huge content is refused before allocating. */
static void test_block_huge_claim(void **state)
{
    (void)state;
    /* magic, FHD: FCS 8 bytes + single segment + checksum, FCS = 200 MiB,
     * one last raw block of 1 byte, then a checksum */
    unsigned char f[24] = {0x28, 0xB5, 0x2F, 0xFD, 0xE4};
    uint64_t fcs = (uint64_t)200 << 20;
    memcpy(f + 5, &fcs, 8); /* little-endian host assumed by the test */
    f[13] = 0x09, f[14] = 0, f[15] = 0; /* last, raw, size 1 */
    f[16] = 'x';
    expect_corrupt(f, 21, "blocks hold at most");
    /* claims 1 TiB */
    fcs = (uint64_t)1 << 40;
    memcpy(f + 5, &fcs, 8);
    expect_corrupt(f, 21, "limit");
    /* an RLE block claims 128 KiB from 4 bytes: bounded, then fails content */
    fcs = 100000;
    memcpy(f + 5, &fcs, 8);
    uint32_t bh = 1 | (1u << 1) | (100000u << 3);
    f[13] = (unsigned char)bh, f[14] = (unsigned char)(bh >> 8), f[15] = (unsigned char)(bh >> 16);
    expect_corrupt(f, 21, "zstd");
}

/* ---- shard files ----------------------------------------------------------- */

/* Writes `nblocks` blocks over 3 buckets (bucket 1 empty) to path; with
 * `hex`, finishes hashing the copy on its way (ps_shard_writer_finish_hashed). */
static void write_shard_hashed(const char *path, int nblocks, const char *meta,
                               size_t block_len, size_t map, char *hex, uint64_t *bytes)
{
    ps_shard_writer *w;
    ps_error err;
    int rc = ps_shard_writer_open_map(&w, path, map, &err);
    if (rc)
        fail_msg("open: %s", err.message);
    unsigned char *blk = malloc(block_len);
    /* keys in order: bucket 0 blocks 0..h-1, then bucket 2 */
    int h = (nblocks + 1) / 2;
    for (int i = 0; i < nblocks; i++) {
        uint32_t bucket = i < h ? 0 : 2, seq = (uint32_t)(i < h ? i : i - h);
        memset(blk, 'a' + i % 26, block_len);
        memcpy(blk, &i, sizeof i);
        rc = ps_shard_writer_put(w, bucket, seq, blk, block_len, &err);
        if (rc)
            fail_msg("put %d: %s", i, err.message);
    }
    free(blk);
    rc = hex ? ps_shard_writer_finish_hashed(w, meta, hex, bytes, &err)
             : ps_shard_writer_finish(w, meta, &err);
    if (rc)
        fail_msg("finish: %s", err.message);
}

static void write_shard_map(const char *path, int nblocks, const char *meta, size_t block_len,
                            size_t map)
{
    write_shard_hashed(path, nblocks, meta, block_len, map, NULL, NULL);
}

static void write_shard(const char *path, int nblocks, const char *meta, size_t block_len)
{
    write_shard_map(path, nblocks, meta, block_len, 0);
}

#define META1 "{\"magic\":\"pairshard-shard\",\"format_version\":1,\"shard\":0,\"shards\":1}"

/* A finish that hashes the copy on its way writes the same bytes, and
 * gives the hash and size of the file read back. */
static void test_writer_hashed_finish(void **state)
{
    (void)state;
    char *a = tmp_path("plain.mdb"), *b = tmp_path("hashed.mdb");
    write_shard(a, 300, META1, 40000); /* 12 MB: several of the sink's writeback steps */
    char hex[65] = "", want[65];
    uint64_t bytes = 0, want_bytes = 0;
    write_shard_hashed(b, 300, META1, 40000, 0, hex, &bytes);
    size_t la, lb;
    unsigned char *da = ps_test_read_file(a, &la), *db = ps_test_read_file(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    ps_error err;
    assert_int_equal(ps_sha256_file(b, want, &want_bytes, &err), 0);
    assert_string_equal(hex, want);
    assert_int_equal(bytes, want_bytes);
    assert_int_equal(bytes, lb);
    free(da);
    free(db);
    unlink(a);
    unlink(b);
    free(a);
    free(b);
}

/* The compacted copy keeps its thread to one CPU while it runs (see
 * copy_compact): the caller's CPU set is its own again after a finish. */
static void test_writer_keeps_affinity(void **state)
{
    (void)state;
    cpu_set_t before, after;
    /* every CPU there is (the kernel keeps those the thread may use), so a
     * set left narrowed by an earlier test cannot hide a narrowing here */
    CPU_ZERO(&before);
    for (long c = 0, n = sysconf(_SC_NPROCESSORS_CONF); c < n && c < CPU_SETSIZE; c++)
        CPU_SET((int)c, &before);
    assert_int_equal(pthread_setaffinity_np(pthread_self(), sizeof before, &before), 0);
    assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof before, &before), 0);
    if (CPU_COUNT(&before) < 2)
        skip(); /* one CPU: nothing to narrow (reported as a skip by cmocka) */
    char *a = tmp_path("affinity.mdb");
    write_shard(a, 50, META1, 20000);
    assert_int_equal(pthread_getaffinity_np(pthread_self(), sizeof after, &after), 0);
    assert_true(CPU_EQUAL(&before, &after));
    unlink(a);
    free(a);
}

static void test_writer_deterministic(void **state)
{
    (void)state;
    char *a = tmp_path("a.mdb"), *b = tmp_path("b.mdb");
    write_shard(a, 41, META1, 3000);
    write_shard(b, 41, META1, 3000);
    size_t la, lb;
    unsigned char *da = ps_test_read_file(a, &la), *db = ps_test_read_file(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    free(da);
    free(db);
    /* no temporaries or lock files are left beside it */
    char side[4200];
    struct stat st;
    snprintf(side, sizeof side, "%s.build", a);
    assert_int_not_equal(stat(side, &st), 0);
    snprintf(side, sizeof side, "%s.part", a);
    assert_int_not_equal(stat(side, &st), 0);
    snprintf(side, sizeof side, "%s-lock", a);
    assert_int_not_equal(stat(side, &st), 0);
    /* a different put gives different bytes */
    unlink(b);
    write_shard(b, 40, META1, 3000);
    db = ps_test_read_file(b, &lb);
    da = ps_test_read_file(a, &la);
    assert_true(la != lb || memcmp(da, db, la));
    free(da);
    free(db);
    /* maps that had to grow many times (64 KiB start, aborts, replays):
     * the same puts still give the same bytes, and the content reads back */
    unlink(a);
    unlink(b);
    write_shard_map(a, 301, META1, 20000, 64 << 10);
    write_shard_map(b, 301, META1, 20000, 64 << 10);
    da = ps_test_read_file(a, &la);
    db = ps_test_read_file(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(da, db, la);
    free(da);
    free(db);
    ps_shard *s;
    ps_error err;
    assert_int_equal(ps_shard_open(&s, a, &err), 0);
    assert_int_equal(ps_shard_block_count(s), 301);
    uint32_t bk, sq;
    const void *d;
    size_t n;
    int i = 0, rc;
    while ((rc = ps_shard_next(s, &bk, &sq, &d, &n, &err)) == 1) {
        int first;
        memcpy(&first, d, sizeof first);
        assert_int_equal(first, i);
        assert_int_equal(n, 20000);
        assert_int_equal(((const unsigned char *)d)[n - 1], 'a' + i % 26);
        i++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(i, 301);
    ps_shard_close(s);
    unlink(a);
    unlink(b);
    free(a);
    free(b);
}

/* Writes `nblocks` blocks of 1 to `block_len` bytes (small ones in leaf
 * pages, most in overflow pages) to path, with the replay log kept for
 * every put when `always_log`, and a version 2 shard's lengths when
 * `lengths`. */
static void write_shard_logged(const char *path, int nblocks, size_t block_len, size_t map,
                               bool always_log, bool lengths)
{
    ps_shard_writer *w;
    ps_error err;
    int rc = lengths ? ps_shard_writer_open_lengths(&w, path, map, &err)
                     : ps_shard_writer_open_map(&w, path, map, &err);
    if (rc)
        fail_msg("open: %s", err.message);
    if (always_log)
        ps_shard_writer_log_always(w);
    unsigned char *blk = malloc(block_len);
    uint32_t lens[3];
    for (int i = 0; i < nblocks; i++) {
        size_t n = 1 + ((size_t)i * 7919u) % block_len;
        memset(blk, 'a' + i % 26, n);
        memcpy(blk, &i, n < sizeof i ? n : sizeof i);
        rc = ps_shard_writer_put(w, (uint32_t)i / 500, (uint32_t)i % 500, blk, n, &err);
        for (int k = 0; !rc && lengths && k < 3; k++)
            lens[k] = (uint32_t)(i + k);
        if (!rc && lengths)
            rc = ps_shard_writer_put_lengths(w, (uint32_t)i / 500, (uint32_t)i % 500, lens, 3,
                                             &err);
        if (rc)
            fail_msg("put %d: %s", i, err.message);
    }
    free(blk);
    if (ps_shard_writer_finish(w, META1, &err))
        fail_msg("finish: %s", err.message);
}

/* A writer keeps its replay log only while the map might fill, and reads
 * the puts back into it when that starts: the same bytes as a writer that
 * logged every put, whether its map never grows (1 GiB), grows after it
 * started logging mid-transaction (8 MiB) or from the first put (64 KiB),
 * and across its commits (over 32 MB logged). */
static void test_writer_lazy_log(void **state)
{
    (void)state;
    static const struct {
        size_t map;
        int nblocks;
        size_t block_len;
    } cases[] = {{0, 300, 20000},        {(size_t)8 << 20, 700, 30000},
                 {64 << 10, 301, 20000}, {0, 2400, 30000},
                 {(size_t)8 << 20, 2400, 30000}};
    char *a = tmp_path("logged.mdb"), *b = tmp_path("lazy.mdb");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int lengths = 0; lengths < 2; lengths++) {
            write_shard_logged(a, cases[c].nblocks, cases[c].block_len, cases[c].map, true,
                               lengths);
            write_shard_logged(b, cases[c].nblocks, cases[c].block_len, cases[c].map, false,
                               lengths);
            size_t la, lb;
            unsigned char *da = ps_test_read_file(a, &la), *db = ps_test_read_file(b, &lb);
            assert_int_equal(la, lb);
            if (memcmp(da, db, la))
                fail_msg("case %zu (lengths %d): the bytes differ", c, lengths);
            free(da);
            free(db);
            ps_shard *s;
            ps_error err;
            assert_int_equal(ps_shard_open(&s, b, &err), 0);
            assert_int_equal(ps_shard_block_count(s), cases[c].nblocks);
            const void *d;
            size_t n;
            int last = cases[c].nblocks - 1;
            assert_int_equal(ps_shard_get(s, (uint32_t)last / 500, (uint32_t)last % 500, &d, &n,
                                          &err),
                             1);
            assert_int_equal(n, 1 + ((size_t)last * 7919u) % cases[c].block_len);
            ps_shard_close(s);
            unlink(a);
            unlink(b);
        }
    free(a);
    free(b);
}

static void test_writer_rejects(void **state)
{
    (void)state;
    char *p = tmp_path("order.mdb");
    ps_shard_writer *w;
    ps_error err;
    assert_int_equal(ps_shard_writer_open(&w, p, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 1, 5, "x", 1, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 1, 5, "x", 1, &err), PS_EINVAL);
    assert_non_null(strstr(err.message, "bucket 1 block 5"));
    assert_int_equal(ps_shard_writer_put(w, 1, 4, "x", 1, &err), PS_EINVAL);
    assert_int_equal(ps_shard_writer_put(w, 0, 9, "x", 1, &err), PS_EINVAL);
    assert_int_equal(ps_shard_writer_put(w, 1, 6, "x", 1, &err), 0);
    assert_int_equal(ps_shard_writer_put(w, 2, 0, "x", 1, &err), 0);
    ps_shard_writer_abort(w);
    struct stat st;
    assert_int_not_equal(stat(p, &st), 0);
    char side[4200];
    snprintf(side, sizeof side, "%s.build", p);
    assert_int_not_equal(stat(side, &st), 0);
    /* an existing file is not overwritten */
    write_all(p, "keep", 4);
    assert_int_equal(ps_shard_writer_open(&w, p, &err), PS_EIO);
    assert_non_null(strstr(err.message, "exists"));
    unlink(p);
    free(p);
}

/* A shard bigger than the initial map, with blocks bigger than a page,
 * reads back intact. Also exercises the log commits. */
static void test_writer_large_and_reader(void **state)
{
    (void)state;
    char *p = tmp_path("large.mdb");
    write_shard(p, 801, META1, 70000); /* ~56 MB: over one log commit */
    ps_shard *s;
    ps_error err;
    int rc = ps_shard_open(&s, p, &err);
    if (rc)
        fail_msg("open: %s", err.message);
    assert_string_equal(ps_shard_meta(s), META1);
    assert_int_equal(ps_shard_block_count(s), 801);
    const void *d;
    size_t n;
    assert_int_equal(ps_shard_get(s, 2, 0, &d, &n, &err), 1);
    assert_int_equal(n, 70000);
    int first;
    memcpy(&first, d, sizeof first);
    assert_int_equal(first, 401);
    assert_int_equal(ps_shard_get(s, 1, 0, &d, &n, &err), 0);
    assert_int_equal(ps_shard_get(s, 2, 400, &d, &n, &err), 0);
    /* cursor: every key in order, then a seek into bucket 2 */
    uint32_t b, q;
    int count = 0;
    while ((rc = ps_shard_next(s, &b, &q, &d, &n, &err)) == 1) {
        int i;
        memcpy(&i, d, sizeof i);
        assert_int_equal(i, count);
        assert_int_equal(b, count < 401 ? 0 : 2);
        assert_int_equal(q, (uint32_t)(count < 401 ? count : count - 401));
        count++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(count, 801);
    assert_int_equal(ps_shard_seek(s, 1, 0, &err), 0);
    assert_int_equal(ps_shard_next(s, &b, &q, &d, &n, &err), 1);
    assert_int_equal(b, 2);
    assert_int_equal(q, 0);
    assert_int_equal(ps_shard_next(s, &b, &q, &d, &n, &err), 1);
    assert_int_equal(q, 1);
    ps_shard_close(s);
    unlink(p);
    free(p);
}

typedef struct counter {
    int n, stop_at;
    uint32_t last_b, last_q;
} counter;

static int count_fn(void *user, uint32_t bucket, uint32_t seq, const void *data, size_t len)
{
    counter *c = user;
    (void)data;
    (void)len;
    c->last_b = bucket;
    c->last_q = seq;
    return ++c->n == c->stop_at ? 42 : 0;
}

static void test_reader_foreach(void **state)
{
    (void)state;
    char *p = tmp_path("each.mdb");
    write_shard(p, 9, META1, 100);
    ps_shard *s;
    ps_error err;
    assert_int_equal(ps_shard_open(&s, p, &err), 0);
    counter c = {0, 0, 0, 0};
    assert_int_equal(ps_shard_foreach(s, count_fn, &c, &err), 0);
    assert_int_equal(c.n, 9);
    assert_int_equal(c.last_b, 2);
    assert_int_equal(c.last_q, 3);
    c = (counter){0, 3, 0, 0};
    assert_int_equal(ps_shard_foreach(s, count_fn, &c, &err), 42);
    assert_int_equal(c.n, 3);
    ps_shard_close(s);
    unlink(p);
    free(p);
}

static void test_reader_version_and_magic(void **state)
{
    (void)state;
    char *p = tmp_path("v99.mdb");
    write_shard(p, 2, "{\"magic\":\"pairshard-shard\",\"format_version\":99,\"shard\":0}", 10);
    ps_shard *s;
    ps_error err;
    assert_int_equal(ps_shard_open(&s, p, &err), PS_EVERSION);
    assert_null(s);
    assert_non_null(strstr(err.message, "v99.mdb"));
    assert_non_null(strstr(err.message, "99"));
    assert_non_null(strstr(err.message, "(2)")); /* the newest this pairshard reads */
    unlink(p);
    write_shard(p, 2, "{\"magic\":\"something-else\",\"format_version\":1}", 10);
    assert_int_equal(ps_shard_open(&s, p, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.message, "magic"));
    unlink(p);
    write_shard(p, 2, "not json", 10);
    assert_int_equal(ps_shard_open(&s, p, &err), PS_ECORRUPT);
    unlink(p);
    write_shard(p, 2, "{\"magic\":\"pairshard-shard\",\"format_version\":\"1\"}", 10);
    assert_int_equal(ps_shard_open(&s, p, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.message, "format_version"));
    unlink(p);
    free(p);
}

static void test_reader_not_a_shard(void **state)
{
    (void)state;
    char *p = tmp_path("junk.mdb");
    ps_shard *s;
    ps_error err;
    static char junk[20000];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(i * 31 + 7);
    write_all(p, junk, sizeof junk);
    assert_int_equal(ps_shard_open(&s, p, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.message, "junk.mdb"));
    write_all(p, "", 0);
    assert_int_equal(ps_shard_open(&s, p, &err), PS_ECORRUPT);
    write_all(p, junk, 100);
    assert_int_equal(ps_shard_open(&s, p, &err), PS_ECORRUPT);
    unlink(p);
    assert_int_equal(ps_shard_open(&s, p, &err), PS_ENOENT);
    /* an LMDB file without our meta database */
    unlink(p);
    ps_shard_writer *w;
    assert_int_equal(ps_shard_writer_open(&w, p, &err), 0);
    assert_int_equal(ps_shard_writer_finish(w, META1, &err), 0);
    assert_int_equal(ps_shard_open(&s, p, &err), 0); /* empty but valid */
    assert_int_equal(ps_shard_block_count(s), 0);
    ps_shard_close(s);
    unlink(p);
    free(p);
}

/* A truncated shard is refused before any page is touched. */
static void test_reader_truncated(void **state)
{
    (void)state;
    char *p = tmp_path("trunc.mdb");
    write_shard(p, 30, META1, 5000);
    size_t len;
    unsigned char *d = ps_test_read_file(p, &len);
    size_t cuts[] = {len - 1, len - 4096, len / 2, 8192, 4096};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_all(p, d, cuts[i]);
        ps_shard *s;
        ps_error err;
        int rc = ps_shard_open(&s, p, &err);
        if (rc != PS_ECORRUPT)
            fail_msg("cut at %zu: rc %d (%s)", cuts[i], rc, err.message);
        assert_non_null(strstr(err.message, "trunc.mdb"));
    }
    free(d);
    unlink(p);
    free(p);
}

static int drain(ps_shard *s, uint64_t *n)
{
    uint32_t b, q;
    const void *d;
    size_t len;
    ps_error err;
    int rc;
    volatile unsigned char sink = 0;
    *n = 0;
    while ((rc = ps_shard_next(s, &b, &q, &d, &len, &err)) == 1) {
        if (len)
            sink ^= ((const unsigned char *)d)[0] ^ ((const unsigned char *)d)[len - 1];
        (*n)++;
    }
    (void)sink;
    return rc;
}

/* Damage to LMDB's own pages (meta pages, page headers, node offsets)
 * is refused or read safely, never a crash: run under ASan by
 * `make check-asan`. */
static void test_reader_damaged_pages(void **state)
{
    (void)state;
    char *p = tmp_path("pages.mdb");
    write_shard(p, 60, META1, 3000); /* leaf + branch pages and overflow pages */
    size_t len;
    unsigned char *orig = ps_test_read_file(p, &len);
    size_t psize = 4096, refused = 0, opened = 0;
    static const unsigned char vals[] = {0x00, 0xFF, 0x01, 0x80};
    int fd = open(p, O_WRONLY);
    assert_true(fd >= 0);
    for (size_t pos = 0; pos < len; pos++) {
        size_t in_page = pos % psize;
        /* meta pages: every 3rd byte of the first 160; others: headers,
         * offsets and the first nodes */
        if (pos < 2 * psize ? (in_page >= 160 || in_page % 3) : in_page >= 96)
            continue;
        for (size_t v = 0; v < sizeof vals; v++) {
            if (orig[pos] == vals[v])
                continue;
            /* one byte patched in place, restored below */
            assert_int_equal(pwrite(fd, &vals[v], 1, (off_t)pos), 1);
            ps_shard *s;
            ps_error err;
            int rc = ps_shard_open(&s, p, &err);
            if (rc) {
                assert_int_equal(rc, rc == PS_EVERSION ? PS_EVERSION : PS_ECORRUPT);
                assert_non_null(strstr(err.message, "pages.mdb"));
                refused++;
            } else {
                uint64_t n;
                rc = drain(s, &n);
                assert_true(rc == 0 || rc == PS_ECORRUPT);
                ps_shard_close(s);
                opened++;
            }
            assert_int_equal(pwrite(fd, &orig[pos], 1, (off_t)pos), 1);
        }
    }
    close(fd);
    assert_true(refused > 0);
    assert_true(opened > 0);
    free(orig);
    unlink(p);
    free(p);
}

/* ---- manifests ------------------------------------------------------------ */

static void test_shard_names(void **state)
{
    (void)state;
    assert_true(ps_shard_name_ok("shard-00000.mdb"));
    assert_true(ps_shard_name_ok("shard-7.mdb"));
    static const char *bad[] = {"", ".", "..", "shard-.mdb", "shard-0x.mdb", "../shard-0.mdb",
                                "a/shard-0.mdb", "shard-0.mdb/", "/shard-0.mdb", "shard-0.mdbx",
                                "Shard-0.mdb", "shard-0.mdb.part", "shard--1.mdb"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ps_shard_name_ok(bad[i]))
            fail_msg("'%s' accepted", bad[i]);
}

/* Writes DIR/manifest.json with `text`; returns ps_manifest_read's code. */
static int read_manifest_text(const char *text, ps_error *err)
{
    char *dir = tmp_path("mf");
    mkdir(dir, 0755);
    char path[4200];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    write_all(path, text, strlen(text));
    ps_manifest *m = NULL;
    int rc = ps_manifest_read(dir, &m, err);
    ps_manifest_free(m);
    unlink(path);
    rmdir(dir);
    free(dir);
    return rc;
}

#define MF_HEAD "{\"format\":\"pairshard-manifest\",\"format_version\":1,"
#define MF_TOK "\"tokenizer\":{\"vocab_size\":100,\"id_width\":2},"

static void test_manifest_read(void **state)
{
    (void)state;
    ps_error err;
    const char *good = MF_HEAD MF_TOK "\"labels\":[\"a\"],\"buckets\":[8,16],\"block_records\":4,"
                       "\"shards\":[{\"file\":\"shard-00000.mdb\",\"records\":1,\"tokens\":5,"
                       "\"blocks\":1,\"bytes\":8192,\"sha256\":\"" 
                       "0000000000000000000000000000000000000000000000000000000000000000\","
                       "\"buckets\":[{\"bucket\":0,\"records\":1,\"tokens\":5,\"blocks\":1},"
                       "{\"bucket\":1,\"records\":0,\"tokens\":0,\"blocks\":0}]}]}";
    assert_int_equal(read_manifest_text(good, &err), 0);
    assert_int_equal(read_manifest_text("{\"format\":\"pairshard-manifest\",\"format_version\":3}",
                                        &err),
                     PS_EVERSION);
    assert_non_null(strstr(err.message, "version 3 is newer"));
    assert_int_equal(read_manifest_text("[1,2]", &err), PS_EFORMAT);
    assert_int_equal(read_manifest_text("{\"format\":\"x\"}", &err), PS_EFORMAT);
    /* descending bounds, zero block_records, a bad id width */
    assert_int_equal(read_manifest_text(MF_HEAD MF_TOK "\"labels\":[],\"buckets\":[16,8],"
                                        "\"block_records\":4,\"shards\":[]}", &err),
                     PS_EFORMAT);
    assert_non_null(strstr(err.message, "buckets[1]"));
    assert_int_equal(read_manifest_text(MF_HEAD MF_TOK "\"labels\":[],\"buckets\":[8],"
                                        "\"block_records\":0,\"shards\":[]}", &err),
                     PS_EFORMAT);
    assert_int_equal(read_manifest_text(MF_HEAD "\"tokenizer\":{\"vocab_size\":100,\"id_width\":3},"
                                        "\"labels\":[],\"buckets\":[8],\"block_records\":4,"
                                        "\"shards\":[]}", &err),
                     PS_EFORMAT);
    /* too many buckets is refused before anything is allocated for them */
    ps_buf big;
    ps_buf_init(&big);
    ps_buf_puts(&big, MF_HEAD MF_TOK "\"labels\":[],\"block_records\":4,\"shards\":[],\"buckets\":[");
    for (unsigned i = 1; i <= PS_MANIFEST_MAX_BUCKETS + 1; i++)
        ps_buf_printf(&big, i > 1 ? ",%u" : "%u", i);
    ps_buf_puts(&big, "]}");
    assert_int_equal(read_manifest_text(big.data, &err), PS_EFORMAT);
    assert_non_null(strstr(err.message, "buckets"));
    ps_buf_free(&big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_roundtrip_u16),
        cmocka_unit_test(test_block_roundtrip_u32),
        cmocka_unit_test(test_block_zero_records),
        cmocka_unit_test(test_block_single_sequence_and_empty_ids),
        cmocka_unit_test(test_block_encode_rejects),
        cmocka_unit_test(test_block_mutations),
        cmocka_unit_test(test_block_hostile_content),
        cmocka_unit_test(test_block_huge_claim),
        cmocka_unit_test(test_writer_deterministic),
        cmocka_unit_test(test_writer_hashed_finish),
        cmocka_unit_test(test_writer_keeps_affinity),
        cmocka_unit_test(test_writer_lazy_log),
        cmocka_unit_test(test_writer_rejects),
        cmocka_unit_test(test_writer_large_and_reader),
        cmocka_unit_test(test_reader_foreach),
        cmocka_unit_test(test_reader_version_and_magic),
        cmocka_unit_test(test_reader_not_a_shard),
        cmocka_unit_test(test_reader_truncated),
        cmocka_unit_test(test_reader_damaged_pages),
        cmocka_unit_test(test_shard_names),
        cmocka_unit_test(test_manifest_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
