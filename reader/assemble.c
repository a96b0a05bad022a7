/*
 * Batches of the generator layouts (docs/READER.md, "Layouts"): causal
 * (unpacked: a record per row; packed: whole records laid out from column
 * 0 of rows of L) and seq2seq (source and target of each record). The pair
 * layout's batch is reader.c's fill_arrays, unchanged.
 *
 * A slot holds the batch's arrays one after another, each at an 8-byte
 * boundary; the device buffer has the same layout, so one copy moves the
 * whole batch and every device pointer is the host one's offset.
 */
#include "reader/reader_internal.h"

#include <stdlib.h>
#include <string.h>

#define IGNORE_INDEX (-100)

enum {
    A_IDS, A_MASK, A_LABELS, A_POS, A_LENGTHS, A_CLASS, A_CU, A_SEQLENS, A_PROMPT, A_ROWS,
    A_TLENS, A_DMASK, A_DIDS, A_COUNT
};

/* Offsets of the arrays of a batch (SIZE_MAX: absent) and the bytes. */
typedef struct gen_layout {
    size_t off[A_COUNT];
    size_t bytes;
} gen_layout;

static void place(gen_layout *g, int a, size_t bytes)
{
    g->bytes = (g->bytes + 7) & ~(size_t)7;
    g->off[a] = g->bytes;
    g->bytes += bytes;
}

/* B rows of T (source) cells, Tt target cells per row, nseg segments. */
static gen_layout layout_gen(int layout, size_t B, size_t BT, size_t BTt, size_t nseg,
                             size_t elem, int dec_ids)
{
    gen_layout g;
    for (int a = 0; a < A_COUNT; a++)
        g.off[a] = SIZE_MAX;
    g.bytes = 0;
    place(&g, A_IDS, BT * elem);
    place(&g, A_MASK, BT * elem);
    if (layout == PS_LAYOUT_CAUSAL) {
        place(&g, A_LABELS, BT * sizeof(int64_t));
        place(&g, A_POS, BT * elem);
        place(&g, A_LENGTHS, B * elem);
        place(&g, A_CLASS, nseg * sizeof(int64_t));
        place(&g, A_CU, (nseg + 1) * sizeof(int32_t));
        place(&g, A_SEQLENS, nseg * elem);
        place(&g, A_PROMPT, nseg * elem);
        place(&g, A_ROWS, nseg * elem);
    } else {
        place(&g, A_LABELS, BTt * sizeof(int64_t));
        place(&g, A_DMASK, BTt * elem);
        if (dec_ids)
            place(&g, A_DIDS, BTt * elem);
        place(&g, A_LENGTHS, B * elem);
        place(&g, A_TLENS, B * elem);
        place(&g, A_CLASS, B * sizeof(int64_t));
        place(&g, A_SEQLENS, B * elem);
        place(&g, A_ROWS, B * elem);
    }
    g.bytes = (g.bytes + 7) & ~(size_t)7;
    return g;
}

size_t rd_slot_bytes(const ps_reader *r, size_t B, size_t BT, size_t nseg)
{
    /* Every size is monotone in each count: the largest batch's layout. */
    if (r->layout == PS_LAYOUT_PAIR)
        return 0;
    return layout_gen(r->layout, B, BT, BT, nseg, r->elem, 1).bytes;
}

static void *arr(rd_slot *sl, const gen_layout *g, int a)
{
    return g->off[a] == SIZE_MAX ? NULL : (char *)sl->host + g->off[a];
}

/* Sets n cells from k0 of a dtype array to v. */
static void fill_run(void *base, size_t elem, size_t k0, size_t n, int64_t v)
{
    if (elem == 8) {
        int64_t *p = (int64_t *)base + k0;
        for (size_t k = 0; k < n; k++)
            p[k] = v;
    } else {
        int32_t *p = (int32_t *)base + k0;
        for (size_t k = 0; k < n; k++)
            p[k] = (int32_t)v;
    }
}

static uint32_t tok_at(const ps_block_view *v, uint32_t ri, uint32_t k)
{
    return ps_block_token(v, v->token_start[ri] + k);
}

int rd_copy_ids(rd_slot *sl, const rec_ref *refs, uint32_t n)
{
    ps_buf_reset(&sl->idbuf);
    for (uint32_t i = 0; i < n; i++) {
        const ps_block_view *v = refs[i].v;
        uint32_t ri = refs[i].i;
        sl->id_off[i] = sl->idbuf.len;
        sl->srcs[i] = refs[i].src;
        if (ps_buf_append(&sl->idbuf, v->ids + v->id_offset[ri],
                          v->id_offset[ri + 1] - v->id_offset[ri]) ||
            ps_buf_putc(&sl->idbuf, '\0'))
            return PS_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        sl->ids[i] = sl->idbuf.data + sl->id_off[i];
    return PS_OK;
}

/* The batch's fixed fields and its array pointers. */
static void batch_head(ps_reader *r, rd_slot *sl, const gen_layout *g, uint32_t B, uint32_t T,
                       uint32_t Tt, uint32_t n)
{
    ps_batch *bt = &sl->batch;
    memset(bt, 0, sizeof *bt);
    bt->epoch = r->popt.epoch;
    bt->step = sl->step;
    bt->B = B;
    bt->T = T;
    bt->T_target = Tt;
    bt->n_segments = n;
    bt->dtype = r->opt.dtype;
    bt->layout = r->layout;
    bt->device = PS_DEVICE_HOST;
    bt->ids = sl->ids;
    bt->input_ids = arr(sl, g, A_IDS);
    bt->attention_mask = arr(sl, g, A_MASK);
    bt->labels = arr(sl, g, A_LABELS);
    bt->lengths = arr(sl, g, A_LENGTHS);
    bt->class_labels = arr(sl, g, A_CLASS);
    bt->position_ids = arr(sl, g, A_POS);
    bt->cu_seqlens = arr(sl, g, A_CU);
    bt->seq_lens = arr(sl, g, A_SEQLENS);
    bt->prompt_lens = arr(sl, g, A_PROMPT);
    bt->seg_rows = arr(sl, g, A_ROWS);
    bt->target_lens = arr(sl, g, A_TLENS);
    bt->decoder_attention_mask = arr(sl, g, A_DMASK);
    bt->decoder_input_ids = arr(sl, g, A_DIDS);
    sl->used_bytes = g->bytes;
}

/* Segment `s` at column `col` of row `row`: its tokens, mask 1, labels
 * -100 on the prompt and the token on the completion, positions from 0. */
static void put_segment(ps_batch *bt, size_t elem, const rec_ref *s, size_t row, uint32_t T,
                        uint32_t col, uint32_t len, uint32_t pl)
{
    size_t at = row * T + col;
    int64_t *labels = (int64_t *)bt->labels + at;
    for (uint32_t k = 0; k < len; k++) {
        uint32_t t = tok_at(s->v, s->i, k);
        rd_put_elem(bt->input_ids, elem, at + k, t);
        rd_put_elem(bt->position_ids, elem, at + k, k);
        labels[k] = k < pl ? IGNORE_INDEX : (int64_t)t;
    }
    fill_run(bt->attention_mask, elem, at, len, 1);
}

int rd_fill_causal(ps_reader *r, rd_slot *sl, const rec_ref *refs, uint32_t n, uint32_t B,
                   uint32_t bucket_T)
{
    size_t elem = r->elem;
    uint32_t T = r->opt.pack, maxlen = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = refs[i].v->length[refs[i].i];
        maxlen = len > maxlen ? len : maxlen;
    }
    if (!T) {
        uint32_t m = r->opt.pad_multiple;
        T = r->opt.pad_mode == PS_PAD_BUCKET ? bucket_T
                                             : (uint32_t)(((uint64_t)maxlen + m - 1) / m * m);
        if (T == 0 && B)
            T = m;
    }
    if (B == 0)
        T = 0;
    gen_layout g = layout_gen(PS_LAYOUT_CAUSAL, B, (size_t)B * T, 0, n, elem, 0);
    batch_head(r, sl, &g, B, T, 0, n);
    ps_batch *bt = &sl->batch;
    size_t BT = (size_t)B * T;
    /* Padding everywhere first; the segments then overwrite their cells. */
    fill_run(bt->input_ids, elem, 0, BT, r->opt.pad_id);
    fill_run(bt->attention_mask, elem, 0, BT, 0);
    fill_run(bt->position_ids, elem, 0, BT, 0);
    for (size_t k = 0; k < BT; k++)
        ((int64_t *)bt->labels)[k] = IGNORE_INDEX;
    fill_run(bt->lengths, elem, 0, B, 0);
    uint32_t col = 0, row = UINT32_MAX;
    uint64_t real = 0;
    bt->cu_seqlens[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        const rec_ref *s = &refs[i];
        uint32_t len = s->v->length[s->i], pl = s->v->type_boundary[s->i];
        pl = pl < len ? pl : len;
        if (s->row != row) {
            row = s->row;
            col = 0;
        }
        put_segment(bt, elem, s, row, T, col, len, pl);
        col += len;
        rd_put_elem(bt->lengths, elem, row, col);
        ((int64_t *)bt->class_labels)[i] = rd_class_label(s);
        bt->cu_seqlens[i + 1] = bt->cu_seqlens[i] + (int32_t)len;
        rd_put_elem(bt->seq_lens, elem, i, len);
        rd_put_elem(bt->prompt_lens, elem, i, pl);
        rd_put_elem(bt->seg_rows, elem, i, row);
        real += len;
    }
    bt->max_seqlen = maxlen;
    bt->real_tokens = real;
    return rd_copy_ids(sl, refs, n);
}

static uint32_t round_up(uint32_t x, uint32_t m)
{
    return (uint32_t)(((uint64_t)x + m - 1) / m * m);
}

/* One seq2seq row: the source into input_ids/attention_mask, the target
 * into labels (-100 after it), decoder_attention_mask and, when asked,
 * decoder_input_ids (HuggingFace's shift_tokens_right of the labels). */
static void put_pair_row(ps_reader *r, ps_batch *bt, const rec_ref *s, size_t i, uint32_t src,
                         uint32_t tgt)
{
    size_t elem = r->elem, a = i * bt->T, at = i * bt->T_target;
    for (uint32_t k = 0; k < src; k++)
        rd_put_elem(bt->input_ids, elem, a + k, tok_at(s->v, s->i, k));
    fill_run(bt->input_ids, elem, a + src, bt->T - src, r->opt.pad_id);
    fill_run(bt->attention_mask, elem, a, src, 1);
    fill_run(bt->attention_mask, elem, a + src, bt->T - src, 0);
    int64_t *labels = (int64_t *)bt->labels + at;
    for (uint32_t k = 0; k < bt->T_target; k++)
        labels[k] = k < tgt ? (int64_t)tok_at(s->v, s->i, src + k) : IGNORE_INDEX;
    fill_run(bt->decoder_attention_mask, elem, at, tgt, 1);
    fill_run(bt->decoder_attention_mask, elem, at + tgt, bt->T_target - tgt, 0);
    if (bt->decoder_input_ids)
        for (uint32_t k = 0; k < bt->T_target; k++) {
            int64_t v = k == 0 ? r->opt.decoder_start_id : labels[k - 1];
            rd_put_elem(bt->decoder_input_ids, elem, at + k,
                        v == IGNORE_INDEX ? r->opt.pad_id : v);
        }
}

int rd_fill_seq2seq(ps_reader *r, rd_slot *sl, const rec_ref *refs, uint32_t n,
                    uint32_t bucket_T)
{
    size_t elem = r->elem;
    uint32_t ms = 0, mt = 0, m = r->opt.pad_multiple;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = refs[i].v->length[refs[i].i], b = refs[i].v->type_boundary[refs[i].i];
        b = b < len ? b : len;
        ms = b > ms ? b : ms;
        mt = len - b > mt ? len - b : mt;
    }
    uint32_t T = r->opt.pad_mode == PS_PAD_BUCKET ? bucket_T : round_up(ms, m);
    uint32_t Tt = r->opt.pad_mode == PS_PAD_BUCKET ? bucket_T : round_up(mt, m);
    if (n && !T)
        T = m;
    if (n && !Tt)
        Tt = m;
    if (!n)
        T = Tt = 0;
    int dec = r->opt.decoder_start_id >= 0;
    gen_layout g = layout_gen(PS_LAYOUT_SEQ2SEQ, n, (size_t)n * T, (size_t)n * Tt, n, elem, dec);
    batch_head(r, sl, &g, n, T, Tt, n);
    ps_batch *bt = &sl->batch;
    uint64_t real = 0;
    for (uint32_t i = 0; i < n; i++) {
        const rec_ref *s = &refs[i];
        uint32_t len = s->v->length[s->i], b = s->v->type_boundary[s->i];
        b = b < len ? b : len;
        put_pair_row(r, bt, s, i, b, len - b);
        rd_put_elem(bt->lengths, elem, i, b);
        rd_put_elem(bt->target_lens, elem, i, len - b);
        rd_put_elem(bt->seq_lens, elem, i, b);
        rd_put_elem(bt->seg_rows, elem, i, i);
        ((int64_t *)bt->class_labels)[i] = rd_class_label(s);
        real += b;
    }
    bt->max_seqlen = ms;
    bt->real_tokens = real;
    return rd_copy_ids(sl, refs, n);
}
