/*
 * The reader's device layer (reader/device.h) over the CUDA runtime that
 * common/cudart.c loads at run time. Without it (no libcudart on the
 * host, or $PAIRSHARD_CUDART naming a file that does not load) there is
 * no device; with it but without a driver or a GPU cudaGetDeviceCount
 * fails, which reads as zero devices. Either way everything falls back to
 * host memory, unless the caller required a device.
 */
#include "common/cudart.h"
#include "reader/device.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct ps_dev_stream {
    int device;
    void *stream; /* cudaStream_t */
};

int ps_dev_count(void)
{
    const ps_cudart *rt = ps_cudart_get();
    int n = 0;
    if (!rt)
        return 0;
    if (rt->GetDeviceCount(&n) != PS_CU_SUCCESS) {
        rt->GetLastError(); /* clear the sticky-free error state */
        return 0;
    }
    return n;
}

const char *ps_dev_runtime(void) { return ps_cudart_status(); }

static int cuda_fail(const ps_cudart *rt, ps_error *err, const char *what, int e)
{
    return ps_error_set(err, PS_EIO, "CUDA: %s: %s", what, rt->GetErrorString(e));
}

/* The runtime, or PS_EUSAGE naming why there is none. */
static const ps_cudart *runtime(ps_error *err)
{
    const ps_cudart *rt = ps_cudart_get();
    if (!rt)
        ps_error_set(err, PS_EUSAGE, "CUDA runtime %s", ps_cudart_status());
    return rt;
}

int ps_dev_select(int device, ps_error *err)
{
    const ps_cudart *rt = runtime(err);
    if (!rt)
        return PS_EUSAGE;
    int e = rt->SetDevice(device);
    return e == PS_CU_SUCCESS ? PS_OK : cuda_fail(rt, err, "cudaSetDevice", e);
}

void *ps_dev_host_alloc(size_t bytes, int pinned, int lock, int *how)
{
    const ps_cudart *rt = pinned ? ps_cudart_get() : NULL;
    void *p = NULL;
    if (rt) {
        if (rt->HostAlloc(&p, bytes ? bytes : 64, PS_CU_HOST_ALLOC_PORTABLE) == PS_CU_SUCCESS) {
            *how = 2;
            return p;
        }
        rt->GetLastError();
        p = NULL;
    }
    if (posix_memalign(&p, 64, bytes ? bytes : 64))
        return NULL;
    *how = 0;
    if (lock && mlock(p, bytes) == 0)
        *how = 1;
    return p;
}

void ps_dev_host_free(void *p, size_t bytes, int how)
{
    if (!p)
        return;
    if (how == 2) { /* only ever pinned through a loaded runtime */
        ps_cudart_get()->FreeHost(p);
        return;
    }
    if (how == 1)
        munlock(p, bytes);
    free(p);
}

int ps_dev_stream_create(ps_dev_stream **out, int device, ps_error *err)
{
    const ps_cudart *rt = runtime(err);
    if (!rt)
        return PS_EUSAGE;
    ps_dev_stream *s = calloc(1, sizeof *s);
    if (!s)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    s->device = device;
    int e = rt->SetDevice(device);
    if (e == PS_CU_SUCCESS)
        e = rt->StreamCreateWithFlags(&s->stream, PS_CU_STREAM_NON_BLOCKING);
    if (e != PS_CU_SUCCESS) {
        free(s);
        return cuda_fail(rt, err, "creating the copy stream", e);
    }
    *out = s;
    return PS_OK;
}

/* The functions below are reached only with a stream, a device buffer or
 * an event made above, so the runtime is loaded. */

void ps_dev_stream_destroy(ps_dev_stream *s)
{
    if (!s)
        return;
    const ps_cudart *rt = ps_cudart_get();
    rt->StreamSynchronize(s->stream);
    rt->StreamDestroy(s->stream);
    free(s);
}

int ps_dev_malloc(void **out, size_t bytes, ps_error *err)
{
    const ps_cudart *rt = runtime(err);
    if (!rt)
        return PS_EUSAGE;
    int e = rt->Malloc(out, bytes ? bytes : 64);
    return e == PS_CU_SUCCESS ? PS_OK : cuda_fail(rt, err, "cudaMalloc", e);
}

void ps_dev_free(void *p)
{
    if (p)
        ps_cudart_get()->Free(p);
}

int ps_dev_event_create(void **out, ps_error *err)
{
    const ps_cudart *rt = runtime(err);
    if (!rt)
        return PS_EUSAGE;
    int e = rt->EventCreateWithFlags(out, PS_CU_EVENT_DISABLE_TIMING);
    return e == PS_CU_SUCCESS ? PS_OK : cuda_fail(rt, err, "cudaEventCreate", e);
}

void ps_dev_event_destroy(void *ev)
{
    if (ev)
        ps_cudart_get()->EventDestroy(ev);
}

int ps_dev_copy_async(ps_dev_stream *s, void *dst, const void *src, size_t bytes, void *ev,
                      ps_error *err)
{
    const ps_cudart *rt = ps_cudart_get();
    int e = rt->MemcpyAsync(dst, src, bytes, PS_CU_MEMCPY_HOST_TO_DEVICE, s->stream);
    if (e == PS_CU_SUCCESS)
        e = rt->EventRecord(ev, s->stream);
    return e == PS_CU_SUCCESS ? PS_OK : cuda_fail(rt, err, "copying a batch to the device", e);
}

int ps_dev_event_wait(void *ev, ps_error *err)
{
    const ps_cudart *rt = ps_cudart_get();
    int e = rt->EventSynchronize(ev);
    return e == PS_CU_SUCCESS ? PS_OK : cuda_fail(rt, err, "waiting for a copy", e);
}
