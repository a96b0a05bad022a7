/*
 * Shards and windows. A window is the unit of decoding: `window_blocks`
 * consecutive blocks of a bucket's (permuted) block order, decoded once
 * and shared by every batch of this rank that draws records from it, then
 * freed after the last one. Batches of a bucket come in order, so each
 * bucket has only a window or two alive at a time.
 *
 * Every decoded block is checked against the manifest before a record of
 * it is used: its record count, id width, each length within its bucket's
 * bounds, each token below the vocabulary size, each label known. A block
 * that fails (or whose shard cannot be opened) fails its window, and the
 * batches that need the window report it.
 */
#include "reader/reader_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* A new string a + sep + b (NULL when out of memory). */
static char *join3(const char *a, const char *sep, const char *b)
{
    size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, sep, b);
    return s;
}

/* Lets the process hold one descriptor per shard (sets of thousands). */
static void raise_fd_limit(size_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need + 64)
        return;
    rlim_t want = need + 256;
    if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
        want = rl.rlim_max;
    rl.rlim_cur = want;
    setrlimit(RLIMIT_NOFILE, &rl);
}

int rd_shards_open(ps_reader *r, ps_error *err)
{
    const ps_manifest *m = r->m;
    r->shards = calloc(m->n_shards ? m->n_shards : 1, sizeof *r->shards);
    if (!r->shards)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for %zu shards", m->n_shards);
    raise_fd_limit(m->n_shards * 2);
    r->trusted_bytes = calloc(m->n_shards ? m->n_shards : 1, sizeof *r->trusted_bytes);
    if (!r->trusted_bytes)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for %zu shards", m->n_shards);
    uint64_t largest_good = 0;
    for (size_t s = 0; s < m->n_shards; s++) {
        rd_shard *sh = &r->shards[s];
        pthread_mutex_init(&sh->mu, NULL);
        sh->fd = -1;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", rd_shard_dir(r, s), m->shards[s].file);
        /* O_NOFOLLOW: a shard is a file of the set, not a link out of it;
         * O_NONBLOCK: a FIFO in its place must not block the open. */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;
        if (fd < 0) {
            int e = errno;
            sh->state = 2;
            sh->err_code = e == ENOENT || e == ELOOP ? PS_ECORRUPT : PS_EIO;
            sh->err_msg = join3(path, ": cannot open: ", strerror(e));
            if (e == EMFILE || e == ENFILE) {
                int code = ps_error_set(err, PS_ELIMIT, "%s: too many open files (%zu shards)",
                                        path, m->n_shards);
                return code;
            }
        } else if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
            close(fd);
            sh->state = 2;
            sh->err_code = PS_ECORRUPT;
            sh->err_msg = join3(path, ": ", "not a regular file");
        } else if ((uint64_t)st.st_size != m->shards[s].bytes) {
            char what[96];
            snprintf(what, sizeof what, "%lld bytes, the manifest says %llu",
                     (long long)st.st_size, (unsigned long long)m->shards[s].bytes);
            close(fd);
            sh->state = 2;
            sh->err_code = PS_ECORRUPT;
            sh->err_msg = join3(path, ": ", what);
        } else {
            sh->fd = fd;
            r->trusted_bytes[s] = (uint64_t)st.st_size;
            if ((uint64_t)st.st_size > largest_good)
                largest_good = (uint64_t)st.st_size;
        }
        if (sh->state == 2 && !sh->err_msg)
            return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    }
    /* Counts from the manifest are believed only as far as bytes on disk
     * could hold them (ps_plan_build). A damaged or missing shard still
     * gets its place in the plan (its batches report the damage), with its
     * claims capped by the largest intact shard of the set: a manifest
     * whose every file is missing plans nothing. */
    for (size_t s = 0; s < m->n_shards; s++)
        if (r->shards[s].state == 2)
            r->trusted_bytes[s] =
                m->shards[s].bytes < largest_good ? m->shards[s].bytes : largest_good;
    return PS_OK;
}

void rd_shards_close(ps_reader *r)
{
    if (!r->shards)
        return;
    for (size_t s = 0; s < r->m->n_shards; s++) {
        rd_shard *sh = &r->shards[s];
        if (sh->sh)
            ps_shard_close(sh->sh);
        if (sh->fd >= 0)
            close(sh->fd);
        free(sh->err_msg);
        pthread_mutex_destroy(&sh->mu);
    }
    free(r->shards);
    r->shards = NULL;
    free(r->trusted_bytes);
    r->trusted_bytes = NULL;
}

/* Checks the shard's meta/format names its place in this set. */
static int check_shard_meta(ps_reader *r, size_t s, const char *path, ps_error *err)
{
    json_error_t je;
    json_t *root = json_loads(ps_shard_meta(r->shards[s].sh), 0, &je);
    json_t *k = json_object_get(root, "shard"), *n = json_object_get(root, "shards");
    /* its place in its own set */
    size_t want_k = r->n_sets ? r->shard_local[s] : s;
    size_t want_n = r->n_sets ? r->set_m[r->shard_set[s]]->n_shards : r->m->n_shards;
    int ok = json_is_integer(k) && json_is_integer(n) &&
             json_integer_value(k) == (json_int_t)want_k &&
             json_integer_value(n) == (json_int_t)want_n;
    json_decref(root);
    if (!ok)
        return ps_error_set(err, PS_ECORRUPT,
                            "%s: meta/format does not name it shard %zu of %zu (a file from "
                            "another set?)",
                            path, want_k, want_n);
    return PS_OK;
}

/* Opens shard s (sh->mu held) through the descriptor taken at reader
 * open, so a set replaced meanwhile does not leak into this one; the
 * shard keeps that descriptor for its reads. */
static void shard_open(ps_reader *r, size_t s)
{
    rd_shard *sh = &r->shards[s];
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", rd_shard_dir(r, s), r->m->shards[s].file);
    ps_error e = {0};
    int fd = sh->fd;
    sh->fd = -1; /* the shard owns it now, opened or not */
    int rc = fd >= 0 ? ps_shard_open_fd(&sh->sh, fd, path, &e) : ps_shard_open(&sh->sh, path, &e);
    if (!rc)
        rc = check_shard_meta(r, s, path, &e);
    if (rc) {
        if (sh->sh)
            ps_shard_close(sh->sh);
        sh->sh = NULL;
        sh->state = 2;
        sh->err_code = rc;
        sh->err_msg = strdup(e.message);
        return;
    }
    sh->state = 1;
}

/* Reads block (b, seq) of shard s into `out`. The shard is opened (once)
 * under its lock; the read itself is a pread into the caller's buffer,
 * so workers read one shard at the same time, and a shard file truncated
 * meanwhile is a PS_ECORRUPT naming it, never a signal. */
static int shard_block(ps_reader *r, size_t s, uint32_t b, uint32_t seq, ps_buf *out,
                       ps_error *err)
{
    rd_shard *sh = &r->shards[s];
    pthread_mutex_lock(&sh->mu);
    if (sh->state == 0)
        shard_open(r, s);
    int state = sh->state;
    pthread_mutex_unlock(&sh->mu);
    /* Once open (state 1), sh->sh does not change until the reader closes. */
    if (state == 2)
        return ps_error_set(err, sh->err_code, "%s", sh->err_msg ? sh->err_msg : "unusable shard");
    int rc = ps_shard_read(sh->sh, rd_local_bucket(r, s, b), seq, out, err);
    if (rc == 0)
        return ps_error_set(err, PS_ECORRUPT, "%s/%s: bucket %u block %u: missing",
                            rd_shard_dir(r, s), r->m->shards[s].file, b, seq);
    return rc == 1 ? PS_OK : rc;
}

/* One entry of shard s's "lengths" (want_sources 0) or "sources" database
 * under block (b, seq) of the union's numbering, the shard opened (once)
 * under its lock. */
static int shard_entry(ps_reader *r, size_t s, uint32_t b, uint32_t seq, int want_sources,
                       const void **out, size_t *n, ps_error *err)
{
    rd_shard *sh = &r->shards[s];
    pthread_mutex_lock(&sh->mu);
    if (sh->state == 0)
        shard_open(r, s);
    int rc;
    uint32_t lb = rd_local_bucket(r, s, b);
    if (sh->state == 2)
        rc = ps_error_set(err, sh->err_code, "%s", sh->err_msg ? sh->err_msg : "unusable shard");
    else if (want_sources)
        rc = ps_shard_get_sources(sh->sh, lb, seq, (const uint16_t **)out, n, err);
    else
        rc = ps_shard_get_lengths(sh->sh, lb, seq, (const uint32_t **)out, n, err);
    pthread_mutex_unlock(&sh->mu);
    if (rc == 0)
        return ps_error_set(err, PS_ECORRUPT, "%s/%s: bucket %u block %u: no %s entry",
                            rd_shard_dir(r, s), r->m->shards[s].file, lb, seq,
                            want_sources ? "sources" : "lengths");
    return rc == 1 ? PS_OK : rc;
}

int rd_shard_lengths(ps_reader *r, size_t s, uint32_t b, uint32_t seq, const uint32_t **lens,
                     size_t *n, ps_error *err)
{
    return shard_entry(r, s, b, seq, 0, (const void **)lens, n, err);
}

int rd_shard_sources(ps_reader *r, size_t s, uint32_t b, uint32_t seq, const uint16_t **src,
                     size_t *n, ps_error *err)
{
    return shard_entry(r, s, b, seq, 1, (const void **)src, n, err);
}

int rd_record_id(ps_reader *r, size_t s, uint32_t b, uint32_t seq, uint32_t idx, char *out,
                 size_t cap, ps_error *err)
{
    ps_buf raw, dec;
    ps_buf_init(&raw);
    ps_buf_init(&dec);
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    ps_block_view v;
    int rc = dctx ? shard_block(r, s, b, seq, &raw, err)
                  : ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    if (!rc)
        rc = ps_block_decode(raw.data, raw.len, dctx, &dec, &v, err);
    if (!rc && idx >= v.n)
        rc = ps_error_set(err, PS_ECORRUPT, "%s/%s: bucket %u block %u: %u records, not %u",
                          rd_shard_dir(r, s), r->m->shards[s].file, b, seq, v.n, idx + 1);
    if (!rc)
        snprintf(out, cap, "%.*s", (int)(v.id_offset[idx + 1] - v.id_offset[idx]),
                 v.ids + v.id_offset[idx]);
    ZSTD_freeDCtx(dctx);
    ps_buf_free(&raw);
    ps_buf_free(&dec);
    return rc;
}

/* The largest token id of a decoded block (0 when it has none): one
 * branch-free pass per id width, which the compiler vectorises. */
static uint32_t max_token(const ps_block_view *v)
{
    uint64_t n = v->token_start[v->n];
    uint32_t mx = 0;
    if (v->id_width == 2) {
        const uint16_t *t = v->tokens;
        for (uint64_t k = 0; k < n; k++)
            mx = t[k] > mx ? t[k] : mx;
    } else {
        const uint32_t *t = v->tokens;
        for (uint64_t k = 0; k < n; k++)
            mx = t[k] > mx ? t[k] : mx;
    }
    return mx;
}

/* Checks a decoded block against what the manifest says it holds. */
static int check_block(const ps_reader *r, const ps_block_view *v, uint32_t want,
                       const char *dir, const char *file, uint32_t bucket, uint32_t seq,
                       ps_error *err)
{
    uint32_t lower = ps_mf_lower(r->m, bucket), bound = r->m->bounds[bucket];
    char where[4400];
    snprintf(where, sizeof where, "%s/%s: bucket %u block %u", dir, file, bucket, seq);
    if (v->n != want)
        return ps_error_set(err, PS_ECORRUPT, "%s: holds %u records, the manifest says %u",
                            where, v->n, want);
    if (v->id_width != r->m->id_width)
        return ps_error_set(err, PS_ECORRUPT, "%s: id width %d, the manifest says %d", where,
                            v->id_width, r->m->id_width);
    uint64_t vocab = r->m->vocab_size;
    for (uint32_t i = 0; i < v->n; i++) {
        if (v->length[i] <= lower || v->length[i] > bound)
            return ps_error_set(err, PS_ECORRUPT,
                                "%s: record %u has %u tokens, outside the bucket's (%u, %u]",
                                where, i, v->length[i], lower, bound);
        /* The layout's boundary (prompt or source length) lies in the record. */
        if (r->layout != PS_LAYOUT_PAIR && v->type_boundary[i] > v->length[i])
            return ps_error_set(err, PS_ECORRUPT, "%s: record %u has boundary %u past its %u "
                                "tokens", where, i, v->type_boundary[i], v->length[i]);
        if (v->label[i] != PS_LABEL_NONE && v->label[i] >= r->m->n_labels)
            return ps_error_set(err, PS_ECORRUPT, "%s: record %u has label %u of %zu", where, i,
                                v->label[i], r->m->n_labels);
    }
    uint32_t mx = vocab ? max_token(v) : 0;
    if (vocab && mx >= vocab)
        return ps_error_set(err, PS_ECORRUPT, "%s: token id %u >= vocabulary size %llu", where,
                            mx, (unsigned long long)vocab);
    return PS_OK;
}

static void window_destroy(rd_window *w)
{
    if (!w)
        return;
    for (uint32_t k = 0; k < w->cap_blocks && w->bufs; k++)
        ps_buf_free(&w->bufs[k]);
    free(w->bufs);
    ps_buf_free(&w->raw);
    free(w->views);
    for (uint32_t k = 0; k < w->cap_blocks && w->blk_msg; k++)
        free(w->blk_msg[k]);
    free(w->blk_msg);
    free(w->blk_code);
    free(w->rec_block);
    free(w->rec_index);
    free(w->rec_phys);
    free(w->rec_src);
    free(w->perm);
    free(w->err_msg);
    free(w);
}

/* Spare windows kept for reuse (their decoded-block buffers stay
 * allocated, so steady-state decoding allocates nothing). Bounded: a few
 * per bucket, plus one per slot and worker. */
static int spare_limit(const ps_reader *r)
{
    return (int)r->plan.n_buckets * 2 + r->n_slots + r->n_threads;
}

static void window_retire(ps_reader *r, rd_window *w)
{
    free(w->err_msg);
    w->err_msg = NULL;
    if (r->n_spare >= spare_limit(r)) {
        window_destroy(w);
        return;
    }
    w->next_free = r->spare;
    r->spare = w;
    r->n_spare++;
}

static rd_window *window_get(ps_reader *r)
{
    rd_window *w = r->spare;
    if (w) {
        r->spare = w->next_free;
        r->n_spare--;
        w->next_free = NULL;
        w->err_code = 0;
        return w;
    }
    return calloc(1, sizeof *w);
}

/* Room for nb blocks and n records. */
static int window_reserve(rd_window *w, uint32_t nb, uint32_t n)
{
    if (nb > w->cap_blocks) {
        ps_buf *bufs = realloc(w->bufs, nb * sizeof *bufs);
        if (!bufs)
            return PS_ENOMEM;
        w->bufs = bufs;
        for (uint32_t k = w->cap_blocks; k < nb; k++)
            ps_buf_init(&bufs[k]);
        if (ps_array_resize(&w->views, nb, sizeof *w->views) ||
            ps_array_resize(&w->blk_code, nb, sizeof *w->blk_code))
            return PS_ENOMEM;
        char **msgs = realloc(w->blk_msg, nb * sizeof *msgs);
        if (!msgs)
            return PS_ENOMEM;
        w->blk_msg = msgs;
        for (uint32_t k = w->cap_blocks; k < nb; k++)
            msgs[k] = NULL;
        w->cap_blocks = nb;
    }
    if (n > w->cap_recs) {
        if (ps_array_resize(&w->rec_block, n, sizeof *w->rec_block) ||
            ps_array_resize(&w->rec_index, n, sizeof *w->rec_index) ||
            ps_array_resize(&w->rec_phys, n, sizeof *w->rec_phys) ||
            ps_array_resize(&w->rec_src, n, sizeof *w->rec_src) ||
            ps_array_resize(&w->perm, n, sizeof *w->perm))
            return PS_ENOMEM;
        w->cap_recs = n;
    }
    return PS_OK;
}

/* Several sets: a block's label ids (its set's) into the union's, in
 * the decoded block itself (the reader's own buffer). */
static int remap_labels(const ps_reader *r, ps_block_view *v, const ps_plan_block *blk,
                        const char *file, ps_error *err)
{
    uint32_t set = r->shard_set[blk->shard];
    const uint32_t *map = r->label_remap[set];
    size_t n_labels = r->set_m[set]->n_labels;
    uint32_t *lab = (uint32_t *)(uintptr_t)v->label;
    for (uint32_t i = 0; i < v->n; i++) {
        if (lab[i] == PS_LABEL_NONE)
            continue;
        if (lab[i] >= n_labels)
            return ps_error_set(err, PS_ECORRUPT, "%s/%s: bucket %u block %u: record %u has "
                                "label %u of %zu", r->set_dirs[set], file, blk->bucket,
                                blk->seq, i, lab[i], n_labels);
        lab[i] = map[lab[i]];
    }
    return PS_OK;
}

/* Decodes window wi of bucket b into w (no lock held). */
static int window_load(ps_reader *r, uint32_t b, uint32_t wi, rd_window *w, void *dctx,
                       uint64_t *block_bytes, uint64_t *raw_bytes, ps_error *err)
{
    const ps_plan_bucket *pb = &r->plan.buckets[b];
    uint32_t first = wi * pb->window_blocks;
    uint32_t nb = pb->n_blocks - first < pb->window_blocks ? pb->n_blocks - first
                                                            : pb->window_blocks;
    w->n_blocks = nb;
    w->n = (uint32_t)(pb->window_first[wi + 1] - pb->window_first[wi]);
    if (window_reserve(w, nb ? nb : 1, w->n ? w->n : 1))
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory for a window");
    w->n_bad = 0;
    for (uint32_t k = 0; k < nb; k++) {
        const ps_plan_block *blk = &pb->blocks[first + k];
        const char *file = r->m->shards[blk->shard].file;
        uint32_t sb = blk->bucket; /* stored bucket (b, unless packed) */
        ps_error e = {0};
        free(w->blk_msg[k]);
        w->blk_msg[k] = NULL;
        w->blk_code[k] = 0;
        int rc = shard_block(r, blk->shard, sb, blk->seq, &w->raw, &e);
        const void *data = w->raw.data;
        size_t len = w->raw.len;
        if (rc) {
            char msg[PS_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", e.message);
            ps_error_set(&e, rc, "%s (needed for bucket %u block %u)", msg, sb, blk->seq);
        } else if ((rc = ps_block_decode(data, len, dctx, &w->bufs[k], &w->views[k], &e))) {
            char msg[PS_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", e.message);
            ps_error_set(&e, rc, "%s/%s: bucket %u block %u: %s", rd_shard_dir(r, blk->shard),
                         file, sb, blk->seq, msg);
        } else {
            *block_bytes += len;
            *raw_bytes += w->views[k].raw_bytes;
            rc = check_block(r, &w->views[k], blk->stored, rd_shard_dir(r, blk->shard), file,
                             sb, blk->seq, &e);
            if (!rc && r->n_sets)
                rc = remap_labels(r, &w->views[k], blk, file, &e);
        }
        if (rc == PS_ENOMEM)
            return ps_error_set(err, rc, "%s", e.message);
        if (rc) {
            /* The block's records keep their places (the manifest's count),
             * marked damaged for the batches that hold them. */
            memset(&w->views[k], 0, sizeof w->views[k]);
            w->views[k].n = blk->records;
            w->blk_code[k] = rc;
            w->blk_msg[k] = strdup(e.message);
            w->n_bad++;
        }
    }
    /* The records the window takes, block by block (a mixture's copy of
     * a block takes some of its records): their indices in their blocks. */
    uint32_t *block_first = w->rec_index; /* first taken index of each block, briefly */
    uint32_t j = 0;
    for (uint32_t k = 0; k < nb; k++) {
        const ps_plan_block *blk = &pb->blocks[first + k];
        block_first[k] = j;
        if (r->plan.opt.mix && !w->blk_code[k]) {
            for (uint32_t i = 0; i < blk->stored; i++)
                if (ps_plan_mix_takes(&r->plan, r->m, blk, i))
                    w->rec_phys[j++] = i;
        } else {
            for (uint32_t i = 0; i < blk->records; i++)
                w->rec_phys[j++] = i;
        }
        if (w->blk_code[k])
            w->views[k].n = blk->records;
    }
    /* Position i of the window's permuted order -> (block, record). */
    ps_plan_window_perm(&r->plan, b, wi, w->perm, w->n);
    /* Invert taken index -> block with a search, keeping perm order. */
    for (uint32_t i = 0; i < w->n; i++) {
        uint32_t s = w->perm[i], lo = 0, hi = nb;
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (block_first[mid] <= s)
                lo = mid;
            else
                hi = mid;
        }
        w->rec_block[i] = lo;
        w->perm[i] = w->rec_phys[s];
    }
    for (uint32_t i = 0; i < w->n; i++) {
        const ps_plan_block *blk = &pb->blocks[first + w->rec_block[i]];
        w->rec_src[i] = rd_record_source(r, blk, w->perm[i]);
    }
    memcpy(w->rec_index, w->perm, (size_t)w->n * sizeof *w->perm);
    return PS_OK;
}

rd_window *rd_window_acquire(ps_reader *r, uint32_t b, uint32_t wi, void *dctx)
{
    rd_window *w = r->win[b][wi];
    if (w) {
        while (w->state == WIN_LOADING)
            pthread_cond_wait(&r->cv_window, &r->mu);
        return w;
    }
    w = window_get(r);
    if (!w)
        return NULL;
    w->state = WIN_LOADING;
    w->users_left = r->plan.buckets[b].window_users[wi];
    r->win[b][wi] = w;
    pthread_mutex_unlock(&r->mu);
    ps_error e = {0};
    uint64_t cbytes = 0, rbytes = 0;
    int rc = window_load(r, b, wi, w, dctx, &cbytes, &rbytes, &e);
    pthread_mutex_lock(&r->mu);
    if (rc) {
        w->state = WIN_FAILED;
        w->err_code = rc;
        w->err_msg = strdup(e.message);
    } else {
        w->state = WIN_READY;
        r->st.blocks_decoded += w->n_blocks;
        r->st.block_bytes += cbytes;
        r->st.raw_bytes += rbytes;
    }
    pthread_cond_broadcast(&r->cv_window);
    return w;
}

void rd_window_release(ps_reader *r, uint32_t b, uint32_t wi)
{
    rd_window *w = r->win[b][wi];
    if (!w)
        return;
    if (w->users_left > 0)
        w->users_left--;
    if (w->users_left == 0) {
        window_retire(r, w);
        r->win[b][wi] = NULL;
    }
}

int rd_windows_alloc(ps_reader *r, ps_error *err)
{
    r->win = calloc(r->plan.n_buckets ? r->plan.n_buckets : 1, sizeof *r->win);
    if (!r->win)
        return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    for (size_t b = 0; b < r->plan.n_buckets; b++) {
        uint32_t n = r->plan.buckets[b].n_windows;
        r->win[b] = calloc(n ? n : 1, sizeof **r->win);
        if (!r->win[b])
            return ps_error_set(err, PS_ENOMEM, "reader: out of memory");
    }
    return PS_OK;
}

void rd_windows_free(ps_reader *r)
{
    if (!r->win)
        return;
    for (size_t b = 0; b < r->plan.n_buckets; b++) {
        if (!r->win[b])
            continue;
        for (uint32_t w = 0; w < r->plan.buckets[b].n_windows; w++)
            window_destroy(r->win[b][w]);
        free(r->win[b]);
    }
    free(r->win);
    r->win = NULL;
    while (r->spare) {
        rd_window *w = r->spare;
        r->spare = w->next_free;
        window_destroy(w);
    }
    r->n_spare = 0;
}
