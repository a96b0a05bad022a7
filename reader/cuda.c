/*
 * The reader's device layer (reader/device.h). With the CUDA toolkit
 * (PS_HAVE_CUDA=1) it calls the CUDA runtime; a machine with the library
 * but no driver or no GPU makes cudaGetDeviceCount fail, which reads as
 * zero devices, and everything falls back to host memory. Without the
 * toolkit the same functions report no device.
 */
#include "reader/device.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if PS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

struct ps_dev_stream {
    int device;
#if PS_HAVE_CUDA
    cudaStream_t stream;
#endif
};

static void *plain_alloc(size_t bytes, int lock, int *how)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64))
        return NULL;
    *how = 0;
    if (lock && mlock(p, bytes) == 0)
        *how = 1;
    return p;
}

#if PS_HAVE_CUDA

int ps_dev_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error state */
        return 0;
    }
    return n;
}

static int cuda_fail(ps_error *err, const char *what, cudaError_t e)
{
    return ps_error_set(err, PS_EIO, "CUDA: %s: %s", what, cudaGetErrorString(e));
}

int ps_dev_select(int device, ps_error *err)
{
    cudaError_t e = cudaSetDevice(device);
    return e == cudaSuccess ? PS_OK : cuda_fail(err, "cudaSetDevice", e);
}

void *ps_dev_host_alloc(size_t bytes, int pinned, int lock, int *how)
{
    if (pinned) {
        void *p = NULL;
        if (cudaHostAlloc(&p, bytes ? bytes : 64, cudaHostAllocPortable) == cudaSuccess) {
            *how = 2;
            return p;
        }
        cudaGetLastError();
    }
    return plain_alloc(bytes, lock, how);
}

void ps_dev_host_free(void *p, size_t bytes, int how)
{
    if (!p)
        return;
    if (how == 2) {
        cudaFreeHost(p);
        return;
    }
    if (how == 1)
        munlock(p, bytes);
    free(p);
}

int ps_dev_stream_create(ps_dev_stream **out, int device, ps_error *err)
{
    ps_dev_stream *s = calloc(1, sizeof *s);
    if (!s)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    s->device = device;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(s);
        return cuda_fail(err, "creating the copy stream", e);
    }
    *out = s;
    return PS_OK;
}

void ps_dev_stream_destroy(ps_dev_stream *s)
{
    if (!s)
        return;
    cudaStreamSynchronize(s->stream);
    cudaStreamDestroy(s->stream);
    free(s);
}

int ps_dev_malloc(void **out, size_t bytes, ps_error *err)
{
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 64);
    return e == cudaSuccess ? PS_OK : cuda_fail(err, "cudaMalloc", e);
}

void ps_dev_free(void *p)
{
    if (p)
        cudaFree(p);
}

int ps_dev_event_create(void **out, ps_error *err)
{
    cudaEvent_t ev;
    cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (e != cudaSuccess)
        return cuda_fail(err, "cudaEventCreate", e);
    *out = (void *)ev;
    return PS_OK;
}

void ps_dev_event_destroy(void *ev)
{
    if (ev)
        cudaEventDestroy((cudaEvent_t)ev);
}

int ps_dev_copy_async(ps_dev_stream *s, void *dst, const void *src, size_t bytes, void *ev,
                      ps_error *err)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s->stream);
    if (e == cudaSuccess)
        e = cudaEventRecord((cudaEvent_t)ev, s->stream);
    return e == cudaSuccess ? PS_OK : cuda_fail(err, "copying a batch to the device", e);
}

int ps_dev_event_wait(void *ev, ps_error *err)
{
    cudaError_t e = cudaEventSynchronize((cudaEvent_t)ev);
    return e == cudaSuccess ? PS_OK : cuda_fail(err, "waiting for a copy", e);
}

#else /* no CUDA toolkit at build time */

int ps_dev_count(void) { return 0; }

static int no_cuda(ps_error *err)
{
    return ps_error_set(err, PS_EUSAGE, "this pairshard was built without CUDA");
}

int ps_dev_select(int device, ps_error *err)
{
    (void)device;
    return no_cuda(err);
}

void *ps_dev_host_alloc(size_t bytes, int pinned, int lock, int *how)
{
    (void)pinned;
    return plain_alloc(bytes, lock, how);
}

void ps_dev_host_free(void *p, size_t bytes, int how)
{
    if (p && how == 1)
        munlock(p, bytes);
    free(p);
}

int ps_dev_stream_create(ps_dev_stream **out, int device, ps_error *err)
{
    (void)out;
    (void)device;
    return no_cuda(err);
}
void ps_dev_stream_destroy(ps_dev_stream *s) { free(s); }
int ps_dev_malloc(void **out, size_t bytes, ps_error *err)
{
    (void)out;
    (void)bytes;
    return no_cuda(err);
}
void ps_dev_free(void *p) { (void)p; }
int ps_dev_event_create(void **out, ps_error *err)
{
    (void)out;
    return no_cuda(err);
}
void ps_dev_event_destroy(void *ev) { (void)ev; }
int ps_dev_copy_async(ps_dev_stream *s, void *dst, const void *src, size_t bytes, void *ev,
                      ps_error *err)
{
    (void)s;
    (void)dst;
    (void)src;
    (void)bytes;
    (void)ev;
    return no_cuda(err);
}
int ps_dev_event_wait(void *ev, ps_error *err)
{
    (void)ev;
    return no_cuda(err);
}

#endif
