/*
 * The shard block decoder (ps_block_decode) on hostile bytes. Built twice:
 * as is, the input is the stored frame; with FUZZ_BLOCK_CONTENT, the input
 * is the block's content, compressed here into a valid frame first, so
 * that the header, offset and length checks behind zstd's checksum are
 * reached too. A decoded view is walked end to end (every id, every token)
 * so that ASan sees any view the checks let through that points outside
 * the decoded bytes.
 */
#include "store/shards.h"
#include "tests/fuzz/fuzz_util.h"

#include <zstd.h>

static ZSTD_DCtx *dctx;
static ps_buf scratch;

static void walk(const ps_block_view *v)
{
    volatile uint64_t sink = 0;
    if (v->id_width != 2 && v->id_width != 4)
        abort();
    if (v->token_start[0] != 0)
        abort();
    for (uint32_t i = 0; i < v->n; i++) {
        if (v->type_boundary[i] > v->length[i] || v->id_offset[i] > v->id_offset[i + 1])
            abort();
        if (v->token_start[i + 1] - v->token_start[i] != v->length[i])
            abort();
        for (uint32_t k = v->id_offset[i]; k < v->id_offset[i + 1]; k++)
            sink += (unsigned char)v->ids[k];
        sink += v->label[i];
    }
    for (uint64_t k = 0; k < v->token_start[v->n]; k++)
        sink += ps_block_token(v, k);
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dctx) {
        dctx = ZSTD_createDCtx();
        ps_buf_init(&scratch);
    }
    const void *frame = data;
    size_t frame_len = size;
#ifdef FUZZ_BLOCK_CONTENT
    static ZSTD_CCtx *cctx;
    static void *out;
    static size_t out_cap;
    if (!cctx)
        cctx = ZSTD_createCCtx();
    size_t bound = ZSTD_compressBound(size);
    if (bound > out_cap) {
        free(out);
        out = malloc(bound);
        out_cap = bound;
    }
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
    size_t zr = ZSTD_compress2(cctx, out, out_cap, data, size);
    if (ZSTD_isError(zr))
        abort();
    frame = out;
    frame_len = zr;
#endif
    ps_block_view v;
    ps_error err = {0};
    int rc = ps_block_decode(frame, frame_len, dctx, &scratch, &v, &err);
    FUZZ_CHECK_ERROR(rc, err);
    if (rc == 0)
        walk(&v);
    else if (rc != PS_ECORRUPT && rc != PS_ENOMEM)
        abort(); /* documented: only these two */
    return 0;
}
