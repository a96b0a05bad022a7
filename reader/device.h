/*
 * reader/device.h — the little of CUDA the reader uses, behind functions
 * that also work without it. reader/cuda.c implements them with the CUDA
 * runtime that common/cudart.c loads at run time, and as "no device"
 * where it does not load; either way the reader's code is the same.
 */
#ifndef PS_READER_DEVICE_H
#define PS_READER_DEVICE_H

#include "common/ps_internal.h"

#include <stddef.h>

/* Number of usable CUDA devices (0 without the CUDA runtime, without a
 * driver or without a GPU; never an error). */
int ps_dev_count(void);
/* The runtime as loaded, or why not ("not loaded (REASON)"), for messages. */
const char *ps_dev_runtime(void);

/* Makes `device` current for the calling thread. Returns 0 or PS_EIO. */
int ps_dev_select(int device, ps_error *err);

/* Host memory for batch slots, 64-byte aligned: pinned (cudaHostAlloc)
 * when `pinned` is non-zero and CUDA can pin, ordinary otherwise, then
 * mlocked when `lock` and it is not pinned. *how says what it got:
 * 2 pinned, 1 mlocked, 0 plain. NULL when out of memory. */
void *ps_dev_host_alloc(size_t bytes, int pinned, int lock, int *how);
void ps_dev_host_free(void *p, size_t bytes, int how);

/* Device-side resources of one reader. */
typedef struct ps_dev_stream ps_dev_stream;
int ps_dev_stream_create(ps_dev_stream **out, int device, ps_error *err);
void ps_dev_stream_destroy(ps_dev_stream *s);

int ps_dev_malloc(void **out, size_t bytes, ps_error *err);
void ps_dev_free(void *p);
int ps_dev_event_create(void **out, ps_error *err);
void ps_dev_event_destroy(void *ev);
/* Enqueues host→device copy of `bytes` on the stream, then records `ev`. */
int ps_dev_copy_async(ps_dev_stream *s, void *dst, const void *src, size_t bytes, void *ev,
                      ps_error *err);
/* Waits until `ev` has completed (host side). */
int ps_dev_event_wait(void *ev, ps_error *err);

#endif /* PS_READER_DEVICE_H */
