/*
 * Blocks: a run of records as one zstd frame (layout in store/shards.h).
 *
 * Decoding treats the bytes as hostile: before anything is allocated the
 * frame's block headers are walked to bound what the frame can really
 * produce, so a 20-byte frame that claims 256 MiB costs nothing; after
 * decompression (which checks zstd's content checksum) every count and
 * offset is checked against the content size before it is used.
 */
#include "store/shards.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define HDR_BYTES 12u
/* Largest decompressed block accepted: far above any real block (128
 * records of 512 uint32 ids are 256 KiB), low enough to bound memory. */
#define MAX_CONTENT ((uint64_t)256 << 20)
#define ZSTD_MAGIC 0xFD2FB528u
#define ZSTD_BLOCK_MAX ((uint64_t)128 << 10)

/* Size of the uncompressed content, or 0 when a size overflows. */
static size_t content_size(const ps_shard_record *recs, size_t n, int w, uint64_t *ids_bytes)
{
    uint64_t idb = 0, toks = 0;
    for (size_t i = 0; i < n; i++) {
        idb += recs[i].id_len;
        toks += recs[i].length;
    }
    *ids_bytes = idb;
    uint64_t pad = (uint64_t)(w - (int)(idb % (uint64_t)w)) % (uint64_t)w;
    uint64_t total = HDR_BYTES + 4 * (4 * (uint64_t)n + 1) + idb + pad + toks * (uint64_t)w;
    if (idb > UINT32_MAX || total > MAX_CONTENT)
        return 0;
    return (size_t)total;
}

int ps_block_encode(const ps_shard_record *recs, size_t n, int id_width, int level, void *cctx,
                    ps_buf *out, ps_error *err)
{
    ps_buf_reset(out);
    if (id_width != 2 && id_width != 4)
        return ps_error_set(err, PS_EINVAL, "block: id width %d (must be 2 or 4)", id_width);
    if (n > UINT32_MAX || (n && !recs))
        return ps_error_set(err, PS_EINVAL, "block: bad record count %zu", n);
    uint32_t max_id = id_width == 2 ? 0xFFFFu : 0x7FFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        const ps_shard_record *r = &recs[i];
        if (r->type_boundary > r->length)
            return ps_error_set(err, PS_EINVAL,
                                "block: record %zu: type boundary %u past its %u tokens", i,
                                r->type_boundary, r->length);
        if ((r->length && !r->ids) || (r->id_len && !r->id))
            return ps_error_set(err, PS_EINVAL, "block: record %zu: missing ids", i);
        for (uint32_t k = 0; k < r->length; k++)
            if (r->ids[k] < 0 || (uint32_t)r->ids[k] > max_id)
                return ps_error_set(err, PS_ERANGE,
                                    "block: record %zu: token id %d does not fit %d bytes", i,
                                    (int)r->ids[k], id_width);
    }
    uint64_t idb;
    size_t raw = content_size(recs, n, id_width, &idb);
    if (!raw)
        return ps_error_set(err, PS_ELIMIT, "block: %zu records exceed the block size limit", n);
    size_t bound = ZSTD_compressBound(raw), total;
    if (!ps_size_add(raw, bound, &total) || ps_buf_reserve(out, total))
        return ps_error_set(err, PS_ENOMEM, "block: out of memory");

    /* The raw content goes at the front of `out`, the frame after it; the
     * frame is then moved down, so repeated calls reuse one buffer. */
    unsigned char *p = (unsigned char *)out->data;
    memcpy(p, PS_BLOCK_MAGIC, 4);
    ps_put_le32(p + 4, (uint32_t)n);
    p[8] = (unsigned char)id_width;
    p[9] = p[10] = p[11] = 0;
    unsigned char *len_a = p + HDR_BYTES, *tb_a = len_a + 4 * n, *lab_a = tb_a + 4 * n,
                  *off_a = lab_a + 4 * n, *ids = off_a + 4 * (n + 1);
    uint32_t off = 0;
    for (size_t i = 0; i < n; i++) {
        ps_put_le32(len_a + 4 * i, recs[i].length);
        ps_put_le32(tb_a + 4 * i, recs[i].type_boundary);
        ps_put_le32(lab_a + 4 * i, recs[i].label);
        ps_put_le32(off_a + 4 * i, off);
        if (recs[i].id_len)
            memcpy(ids + off, recs[i].id, recs[i].id_len);
        off += recs[i].id_len;
    }
    ps_put_le32(off_a + 4 * n, off);
    unsigned char *t = ids + off;
    while ((size_t)(t - p) % (size_t)id_width)
        *t++ = 0;
    for (size_t i = 0; i < n; i++) {
        const int32_t *v = recs[i].ids;
        if (id_width == 2)
            for (uint32_t k = 0; k < recs[i].length; k++, t += 2) {
                t[0] = (unsigned char)v[k];
                t[1] = (unsigned char)(v[k] >> 8);
            }
        else
            for (uint32_t k = 0; k < recs[i].length; k++, t += 4)
                ps_put_le32(t, (uint32_t)v[k]);
    }

    ZSTD_CCtx *cc = cctx ? cctx : ZSTD_createCCtx();
    if (!cc)
        return ps_error_set(err, PS_ENOMEM, "block: out of memory (zstd context)");
    size_t zr = ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
    if (!ZSTD_isError(zr))
        zr = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(zr))
        zr = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(zr))
        zr = ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
    if (!ZSTD_isError(zr))
        zr = ZSTD_compress2(cc, p + raw, bound, p, raw);
    if (!cctx)
        ZSTD_freeCCtx(cc);
    if (ZSTD_isError(zr))
        return ps_error_set(err, PS_EINVAL, "block: zstd: %s", ZSTD_getErrorName(zr));
    memmove(p, p + raw, zr);
    out->len = zr;
    out->data[zr] = '\0';
    return PS_OK;
}

/*
 * Walks the frame (RFC 8878) without decompressing: checks it is exactly
 * one zstd frame filling `len` and returns in *bound the most it can
 * decompress to (raw blocks their size, RLE and compressed blocks at most
 * 128 KiB each). Returns 0 or PS_ECORRUPT.
 */
static int frame_bound(const unsigned char *p, size_t len, uint64_t *bound, ps_error *err)
{
    if (len < 6 || ps_get_le32(p) != ZSTD_MAGIC)
        return ps_error_set(err, PS_ECORRUPT, "not a zstd frame (%zu bytes)", len);
    unsigned fhd = p[4];
    if (fhd & 0x08)
        return ps_error_set(err, PS_ECORRUPT, "zstd frame header: reserved bit set");
    unsigned fcs_flag = fhd >> 6, single = (fhd >> 5) & 1, checksum = (fhd >> 2) & 1;
    static const unsigned did_sz[4] = {0, 1, 2, 4}, fcs_sz[4] = {0, 2, 4, 8};
    size_t pos = 5 + (single ? 0 : 1) + did_sz[fhd & 3] +
                 (fcs_flag == 0 ? (single ? 1 : 0) : fcs_sz[fcs_flag]);
    uint64_t total = 0;
    for (;;) {
        if (pos > len || len - pos < 3)
            return ps_error_set(err, PS_ECORRUPT, "zstd frame truncated at byte %zu", pos);
        uint32_t bh = (uint32_t)p[pos] | (uint32_t)p[pos + 1] << 8 | (uint32_t)p[pos + 2] << 16;
        pos += 3;
        unsigned last = bh & 1, type = (bh >> 1) & 3;
        uint32_t size = bh >> 3;
        uint64_t payload = type == 1 ? 1 : size;
        if (type == 3)
            return ps_error_set(err, PS_ECORRUPT, "zstd frame: reserved block type");
        if (payload > len - pos)
            return ps_error_set(err, PS_ECORRUPT, "zstd frame truncated in a block at byte %zu",
                                pos);
        pos += (size_t)payload;
        total += type == 2 ? ZSTD_BLOCK_MAX : size;
        if (last)
            break;
    }
    if (checksum)
        pos += 4;
    if (pos != len)
        return ps_error_set(err, PS_ECORRUPT, "zstd frame: %s after the frame",
                            pos > len ? "checksum missing" : "trailing bytes");
    if (!checksum)
        return ps_error_set(err, PS_ECORRUPT, "zstd frame has no content checksum");
    *bound = total;
    return PS_OK;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static void swap_u32s(unsigned char *p, size_t count)
{
    for (size_t i = 0; i < count; i++, p += 4) {
        unsigned char a = p[0], b = p[1];
        p[0] = p[3], p[1] = p[2], p[2] = b, p[3] = a;
    }
}
static void swap_u16s(unsigned char *p, size_t count)
{
    for (size_t i = 0; i < count; i++, p += 2) {
        unsigned char a = p[0];
        p[0] = p[1], p[1] = a;
    }
}
#endif

int ps_block_decode(const void *data, size_t len, void *dctx, ps_buf *scratch,
                    ps_block_view *view, ps_error *err)
{
    memset(view, 0, sizeof *view);
    uint64_t bound = 0;
    int rc = frame_bound(data, len, &bound, err);
    if (rc)
        return rc;
    unsigned long long fcs = ZSTD_getFrameContentSize(data, len);
    if (fcs == ZSTD_CONTENTSIZE_ERROR || fcs == ZSTD_CONTENTSIZE_UNKNOWN)
        return ps_error_set(err, PS_ECORRUPT, "zstd frame: %s content size",
                            fcs == ZSTD_CONTENTSIZE_UNKNOWN ? "unknown" : "unreadable");
    if (fcs > MAX_CONTENT)
        return ps_error_set(err, PS_ECORRUPT, "zstd frame claims %llu bytes (limit %llu)", fcs,
                            (unsigned long long)MAX_CONTENT);
    if (fcs > bound)
        return ps_error_set(err, PS_ECORRUPT,
                            "zstd frame claims %llu bytes but its blocks hold at most %llu", fcs,
                            (unsigned long long)bound);
    if (fcs < HDR_BYTES + 4)
        return ps_error_set(err, PS_ECORRUPT, "block content too short (%llu bytes)", fcs);
    size_t c = (size_t)fcs;
    ps_buf_reset(scratch);
    if (ps_buf_reserve(scratch, c))
        return ps_error_set(err, PS_ENOMEM, "block: out of memory (%zu bytes)", c);
    ZSTD_DCtx *dc = dctx ? dctx : ZSTD_createDCtx();
    if (!dc)
        return ps_error_set(err, PS_ENOMEM, "block: out of memory (zstd context)");
    size_t zr = ZSTD_decompressDCtx(dc, scratch->data, c, data, len);
    if (!dctx)
        ZSTD_freeDCtx(dc);
    if (ZSTD_isError(zr))
        return ps_error_set(err, PS_ECORRUPT, "zstd: %s", ZSTD_getErrorName(zr));
    if (zr != c)
        return ps_error_set(err, PS_ECORRUPT, "zstd frame decoded to %zu bytes, header says %zu",
                            zr, c);
    scratch->len = c;
    scratch->data[c] = '\0';

    unsigned char *p = (unsigned char *)scratch->data;
    if (memcmp(p, PS_BLOCK_MAGIC, 4))
        return ps_error_set(err, PS_ECORRUPT, "bad block magic (not PSB1)");
    uint64_t n = ps_get_le32(p + 4);
    int w = p[8];
    if (w != 2 && w != 4)
        return ps_error_set(err, PS_ECORRUPT, "block id width %d (must be 2 or 4)", w);
    if (p[9] | p[10] | p[11])
        return ps_error_set(err, PS_ECORRUPT, "block header padding is not zero");
    /* Four u32 arrays (n, n, n, n + 1) must fit before anything is read. */
    if (n > (c - HDR_BYTES - 4) / 16)
        return ps_error_set(err, PS_ECORRUPT, "block claims %llu records, %zu bytes hold at most %zu",
                            (unsigned long long)n, c, (c - HDR_BYTES - 4) / 16);
    size_t arrays_end = HDR_BYTES + 4 * (4 * (size_t)n + 1);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    swap_u32s(p + HDR_BYTES, 4 * (size_t)n + 1);
#endif
    const uint32_t *length = (const uint32_t *)(p + HDR_BYTES);
    const uint32_t *tb = length + n, *label = tb + n, *off = label + n;
    if (off[0] != 0)
        return ps_error_set(err, PS_ECORRUPT, "record id offsets do not start at 0");
    for (size_t i = 0; i < n; i++)
        if (off[i + 1] < off[i])
            return ps_error_set(err, PS_ECORRUPT, "record %zu: id offsets decrease", i);
    if (off[n] > c - arrays_end)
        return ps_error_set(err, PS_ECORRUPT, "record ids (%u bytes) run past the block", off[n]);
    size_t tok_at = arrays_end + off[n];
    while (tok_at % (size_t)w) {
        if (tok_at >= c || p[tok_at])
            return ps_error_set(err, PS_ECORRUPT, "bad padding after the record ids");
        tok_at++;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (tb[i] > length[i])
            return ps_error_set(err, PS_ECORRUPT, "record %zu: type boundary %u past its %u tokens",
                                i, tb[i], length[i]);
        sum += length[i];
    }
    if (tok_at > c || sum > (c - tok_at) / (size_t)w || sum * (uint64_t)w != c - tok_at)
        return ps_error_set(err, PS_ECORRUPT,
                            "record lengths (%llu tokens of %d bytes) do not fill the block's "
                            "%zu token bytes",
                            (unsigned long long)sum, w, tok_at > c ? 0 : c - tok_at);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (w == 2)
        swap_u16s(p + tok_at, (size_t)sum);
    else
        swap_u32s(p + tok_at, (size_t)sum);
#endif

    /* Prefix sums after the content, 8-aligned. Reserving may move the
     * buffer, so pointers are taken afterwards. */
    size_t ts_at = (c + 7) & ~(size_t)7;
    if (ps_buf_reserve(scratch, ts_at - c + 8 * ((size_t)n + 1)))
        return ps_error_set(err, PS_ENOMEM, "block: out of memory");
    scratch->len = ts_at + 8 * ((size_t)n + 1);
    p = (unsigned char *)scratch->data;
    p[scratch->len] = 0;
    uint64_t *ts = (uint64_t *)(void *)(p + ts_at);
    ts[0] = 0;
    length = (const uint32_t *)(void *)(p + HDR_BYTES);
    for (size_t i = 0; i < n; i++)
        ts[i + 1] = ts[i] + length[i];

    view->n = (uint32_t)n;
    view->id_width = w;
    view->length = length;
    view->type_boundary = length + n;
    view->label = length + 2 * n;
    view->id_offset = length + 3 * n;
    view->ids = (const char *)(p + arrays_end);
    view->tokens = p + tok_at;
    view->token_start = ts;
    view->raw_bytes = c;
    return PS_OK;
}
