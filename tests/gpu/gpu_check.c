/* gpu_check: the reader's CUDA path on a machine with a GPU.
 *
 *   gpu_check DIR [--epochs E] [--batch-size N] [--step-ms MS] [--device D]
 *
 * 1. Correctness: opens DIR twice with the same plan, once with `device`
 *    (require_device: falling back to the host is a failure here) and once
 *    host-only. For every batch of E epochs, in both dtypes, the consumer's
 *    own stream waits on the batch's ready_event, copies the five device
 *    arrays back, and they must equal the host reader's arrays byte for
 *    byte (and the device reader's host slot too, with the same ids).
 * 2. Throughput: the device reader alone, first consumed as fast as
 *    possible, then under a simulated training step (wait on the event,
 *    a device-side memset over a scratch buffer, then a host sleep of
 *    MS milliseconds as the rest of the step): H2D bytes / wall time from
 *    the reader's statistics, and the consumer's stall time (wait_ns).
 * Prints one JSON object. Exits 0 when every batch matched and the reader
 * really used the device with pinned slots, 1 otherwise, 77 when there is
 * no CUDA device, 2 on bad usage. */
#include "pairshard/reader.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000.0 * (long)(ms / 1000)) * 1e6)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

#define CU(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "gpu_check: %s: %s\n", #call, cudaGetErrorString(e_));        \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

static ps_reader *open_or_die(const char *dir, const ps_reader_options *o)
{
    ps_reader *r = NULL;
    ps_error err;
    ps_error_clear(&err);
    if (ps_reader_open(dir, o, NULL, &r, &err) != 0) {
        fprintf(stderr, "gpu_check: open %s (device %d): %s\n", dir, o->device, err.message);
        exit(1);
    }
    return r;
}

/* What both parts read with: rank 0 of 1, `batch` records a batch, 4
 * decode threads, 4 batches ahead. */
/* --pack and --decoder-start-id, for causal and seq2seq sets. */
static uint32_t g_pack;
static int32_t g_decoder_start = -1;

static void base_options(ps_reader_options *o, long batch)
{
    ps_reader_options_init(o);
    o->batch_size = (uint32_t)batch;
    o->pack = g_pack;
    o->skip_long = g_pack > 0;
    o->decoder_start_id = g_decoder_start;
    o->rank = 0;
    o->world_size = 1;
    o->threads = 4;
    o->prefetch = 4;
}

enum { MAX_ARRAYS = 16 };

typedef struct host_copy {
    void *p[MAX_ARRAYS];
    size_t cap[MAX_ARRAYS];
} host_copy;

/* One array of a batch: its name, host and device pointers and bytes. */
typedef struct array {
    const char *name;
    const void *host, *dev;
    size_t bytes;
} array;

/* Every array `b` carries (docs/READER.md, "Layouts"), with its size. */
static int batch_arrays(const ps_batch *b, array *a)
{
    size_t es = b->dtype == PS_DTYPE_INT32 ? 4 : 8, B = b->B, T = b->T, S = b->n_segments;
    size_t Tl = b->layout == PS_LAYOUT_SEQ2SEQ ? b->T_target : T;
    size_t labels = b->layout == PS_LAYOUT_PAIR ? B * 8 : B * Tl * 8;
    const array all[] = {
        {"input_ids", b->input_ids, b->d_input_ids, B * T * es},
        {"attention_mask", b->attention_mask, b->d_attention_mask, B * T * es},
        {"token_type_ids", b->token_type_ids, b->d_token_type_ids, B * T * es},
        {"labels", b->labels, b->d_labels, labels},
        {"lengths", b->lengths, b->d_lengths, B * es},
        {"class_labels", b->class_labels, b->d_class_labels, S * 8},
        {"position_ids", b->position_ids, b->d_position_ids, B * T * es},
        {"cu_seqlens", b->cu_seqlens, b->d_cu_seqlens, (S + 1) * 4},
        {"seq_lens", b->seq_lens, b->d_seq_lens, S * es},
        {"prompt_lens", b->prompt_lens, b->d_prompt_lens, S * es},
        {"seg_rows", b->seg_rows, b->d_seg_rows, S * es},
        {"target_lens", b->target_lens, b->d_target_lens, B * es},
        {"decoder_attention_mask", b->decoder_attention_mask, b->d_decoder_attention_mask,
         B * Tl * es},
        {"decoder_input_ids", b->decoder_input_ids, b->d_decoder_input_ids, B * Tl * es},
    };
    int n = 0;
    for (size_t k = 0; k < sizeof all / sizeof *all; k++)
        if (all[k].host)
            a[n++] = all[k];
    return n;
}

/* Compares one device batch with the host reader's batch; returns the
 * number of differing arrays (0 when equal). */
static int compare(const ps_batch *d, const ps_batch *h, cudaStream_t s, host_copy *hc,
                   uint64_t *bytes)
{
    int bad = 0;
    if (d->B != h->B || d->T != h->T || d->bucket != h->bucket || d->step != h->step ||
        d->dtype != h->dtype || d->real_tokens != h->real_tokens || d->layout != h->layout ||
        d->n_segments != h->n_segments || d->T_target != h->T_target) {
        fprintf(stderr, "gpu_check: epoch %llu step %llu: shape differs (%ux%u vs %ux%u)\n",
                (unsigned long long)h->epoch, (unsigned long long)h->step, d->B, d->T, h->B,
                h->T);
        return 1;
    }
    uint32_t n_ids = h->layout == PS_LAYOUT_PAIR ? h->B : h->n_segments;
    for (uint32_t i = 0; i < n_ids; i++)
        if (strcmp(d->ids[i], h->ids[i]) != 0) {
            fprintf(stderr, "gpu_check: step %llu: id %u differs\n",
                    (unsigned long long)h->step, i);
            return 1;
        }
    if (d->device < 0 || !d->ready_event || !d->d_input_ids) {
        fprintf(stderr, "gpu_check: step %llu: batch has no device copy\n",
                (unsigned long long)h->step);
        return 1;
    }
    array ad[MAX_ARRAYS], ah[MAX_ARRAYS];
    int n = batch_arrays(d, ad);
    if (n != batch_arrays(h, ah)) {
        fprintf(stderr, "gpu_check: step %llu: the batches hold different arrays\n",
                (unsigned long long)h->step);
        return 1;
    }
    /* The trainer's protocol: its stream waits on the reader's event. */
    CU(cudaStreamWaitEvent(s, (cudaEvent_t)d->ready_event, 0));
    for (int k = 0; k < n; k++) {
        if (!ad[k].dev) {
            fprintf(stderr, "gpu_check: step %llu: %s has no device copy\n",
                    (unsigned long long)h->step, ad[k].name);
            return 1;
        }
        if (hc->cap[k] < ad[k].bytes) {
            free(hc->p[k]);
            hc->p[k] = malloc(ad[k].bytes);
            hc->cap[k] = ad[k].bytes;
            if (!hc->p[k]) {
                fputs("gpu_check: out of memory\n", stderr);
                exit(1);
            }
        }
        CU(cudaMemcpyAsync(hc->p[k], ad[k].dev, ad[k].bytes, cudaMemcpyDeviceToHost, s));
    }
    CU(cudaStreamSynchronize(s));
    for (int k = 0; k < n; k++) {
        *bytes += ad[k].bytes;
        if (memcmp(hc->p[k], ah[k].host, ad[k].bytes) != 0) {
            fprintf(stderr, "gpu_check: epoch %llu step %llu: device %s differs from the host "
                    "reader's\n",
                    (unsigned long long)h->epoch, (unsigned long long)h->step, ad[k].name);
            bad++;
        }
        if (memcmp(ad[k].host, ah[k].host, ad[k].bytes) != 0) {
            fprintf(stderr, "gpu_check: epoch %llu step %llu: host slot %s differs\n",
                    (unsigned long long)h->epoch, (unsigned long long)h->step, ad[k].name);
            bad++;
        }
    }
    return bad;
}

typedef struct perf {
    double seconds, h2d_gbps, stall_ms, stall_fraction;
    uint64_t batches, h2d_bytes, waits;
} perf;

static perf run_perf(const char *dir, const ps_reader_options *o, int epochs, double step_ms,
                     void *scratch, size_t scratch_bytes, cudaStream_t s)
{
    ps_reader *r = open_or_die(dir, o);
    perf p;
    memset(&p, 0, sizeof p);
    double t0 = now_s();
    for (int e = 0; e < epochs; e++) {
        if (e)
            ps_reader_set_epoch(r, (uint64_t)e, NULL);
        for (;;) {
            const ps_batch *b = NULL;
            ps_error err;
            int rc = ps_reader_next(r, &b, &err);
            if (rc == 0)
                break;
            if (rc < 0) {
                fprintf(stderr, "gpu_check: next: %s\n", err.message);
                exit(1);
            }
            CU(cudaStreamWaitEvent(s, (cudaEvent_t)b->ready_event, 0));
            if (step_ms > 0) {
                /* the step's device work, ordered after the batch's copies */
                CU(cudaMemsetAsync(scratch, (int)(b->step & 0xFF), scratch_bytes, s));
                sleep_ms(step_ms);
            }
            CU(cudaStreamSynchronize(s));
            ps_batch_release(r, b);
            p.batches++;
        }
    }
    p.seconds = now_s() - t0;
    ps_reader_stats st;
    ps_reader_get_stats(r, &st);
    ps_reader_close(r);
    p.h2d_bytes = st.h2d_bytes;
    p.waits = st.waits;
    p.h2d_gbps = p.seconds > 0 ? st.h2d_bytes / p.seconds / 1e9 : 0;
    p.stall_ms = st.wait_ns / 1e6;
    p.stall_fraction = p.seconds > 0 ? st.wait_ns / 1e9 / p.seconds : 0;
    return p;
}

int main(int argc, char **argv)
{
    const char *dir = NULL;
    int epochs = 2, device = 0;
    long batch = 64;
    double step_ms = 2.0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-') {
            dir = argv[i];
        } else if (i + 1 < argc && strcmp(argv[i], "--epochs") == 0) {
            epochs = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--batch-size") == 0) {
            batch = atol(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--step-ms") == 0) {
            step_ms = atof(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--device") == 0) {
            device = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--pack") == 0) {
            g_pack = (uint32_t)atol(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--decoder-start-id") == 0) {
            g_decoder_start = (int32_t)atol(argv[++i]);
        } else {
            fprintf(stderr, "gpu_check: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!dir || epochs < 1 || batch < 1) {
        fputs("usage: gpu_check DIR [--epochs E] [--batch-size N] [--step-ms MS] [--device D]\n"
              "                 [--pack L] [--decoder-start-id ID]\n",
              stderr);
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev <= device) {
        puts("no CUDA device");
        return 77;
    }
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, device));
    CU(cudaSetDevice(device));
    cudaStream_t s;
    CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    /* ---- 1. every device batch equals the host reader's -------------------- */
    uint64_t checked = 0, mismatches = 0, compared_bytes = 0;
    int used_device = 1, pinned = 1;
    host_copy hc;
    memset(&hc, 0, sizeof hc);
    static const int dtypes[2] = {PS_DTYPE_INT64, PS_DTYPE_INT32};
    for (int t = 0; t < 2; t++) {
        ps_reader_options o;
        base_options(&o, batch);
        o.seed = 17;
        o.dtype = dtypes[t];
        ps_reader_options od = o;
        od.device = device;
        od.require_device = 1;
        ps_reader *rd = open_or_die(dir, &od), *rh = open_or_die(dir, &o);
        ps_reader_info in;
        ps_reader_get_info(rd, &in);
        if (in.device != device)
            used_device = 0;
        if (!in.pinned)
            pinned = 0;
        for (int e = 0; e < (t ? 1 : epochs); e++) {
            if (e) {
                ps_reader_set_epoch(rd, (uint64_t)e, NULL);
                ps_reader_set_epoch(rh, (uint64_t)e, NULL);
            }
            for (;;) {
                const ps_batch *bd = NULL, *bh = NULL;
                ps_error err;
                int a = ps_reader_next(rd, &bd, &err);
                if (a < 0) {
                    fprintf(stderr, "gpu_check: device reader: %s\n", err.message);
                    return 1;
                }
                int b = ps_reader_next(rh, &bh, &err);
                if (b < 0) {
                    fprintf(stderr, "gpu_check: host reader: %s\n", err.message);
                    return 1;
                }
                if (a != b) {
                    fprintf(stderr, "gpu_check: the device reader's epoch %s\n",
                            a ? "is longer" : "ended first");
                    mismatches++;
                }
                if (a == 1 && b == 1) {
                    mismatches += compare(bd, bh, s, &hc, &compared_bytes) != 0;
                    checked++;
                }
                if (a == 1)
                    ps_batch_release(rd, bd);
                if (b == 1)
                    ps_batch_release(rh, bh);
                if (a != 1 || b != 1)
                    break;
            }
        }
        ps_reader_close(rd);
        ps_reader_close(rh);
    }
    for (int k = 0; k < MAX_ARRAYS; k++)
        free(hc.p[k]);

    /* ---- 2. throughput and stalls ------------------------------------------ */
    ps_reader_options o;
    base_options(&o, batch);
    o.device = device;
    o.require_device = 1;
    size_t scratch_bytes = 64u << 20;
    void *scratch = NULL;
    CU(cudaMalloc(&scratch, scratch_bytes));
    perf fast = run_perf(dir, &o, epochs * 4, 0, scratch, scratch_bytes, s);
    perf step = run_perf(dir, &o, epochs, step_ms, scratch, scratch_bytes, s);
    CU(cudaFree(scratch));
    CU(cudaStreamDestroy(s));

    int ok = mismatches == 0 && checked > 0 && used_device && pinned && fast.h2d_bytes > 0;
    printf("{\"device\":\"%s\",\"ordinal\":%d,\"used_device\":%s,\"pinned\":%s,"
           "\"batches_checked\":%llu,\"bytes_compared\":%llu,\"mismatches\":%llu,"
           "\"fast\":{\"batches\":%llu,\"seconds\":%.3f,\"h2d_bytes\":%llu,\"h2d_gbps\":%.3f,"
           "\"stall_ms\":%.3f,\"waits\":%llu},"
           "\"step\":{\"step_ms\":%.3f,\"batches\":%llu,\"seconds\":%.3f,\"h2d_gbps\":%.3f,"
           "\"stall_ms\":%.3f,\"stall_fraction\":%.4f,\"waits\":%llu},\"ok\":%s}\n",
           prop.name, device, used_device ? "true" : "false", pinned ? "true" : "false",
           (unsigned long long)checked, (unsigned long long)compared_bytes,
           (unsigned long long)mismatches, (unsigned long long)fast.batches, fast.seconds,
           (unsigned long long)fast.h2d_bytes, fast.h2d_gbps, fast.stall_ms,
           (unsigned long long)fast.waits, step_ms, (unsigned long long)step.batches,
           step.seconds, step.h2d_gbps, step.stall_ms, step.stall_fraction,
           (unsigned long long)step.waits, ok ? "true" : "false");
    return ok ? 0 : 1;
}
