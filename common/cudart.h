/*
 * common/cudart.h — the CUDA runtime, loaded with dlopen when the reader
 * first asks for a device, so that neither library links libcudart: one
 * build serves GPU hosts and CPU-only hosts, which fall back to host
 * memory (docs/READER.md, "Devices"). reader/cuda.c is its user; it is in
 * common/ because ps_dependency_versions (common/versions.c) reports it.
 *
 * The few types and constants used are declared here, not taken from
 * cuda_runtime_api.h, so the reader compiles without the toolkit: they
 * are the runtime's stable C ABI (cudaError_t and the flag arguments are
 * ints, streams and events opaque pointers; cudaSuccess is 0).
 * tests/test_cudart.c checks them against the toolkit's headers where
 * those are installed.
 */
#ifndef PS_COMMON_CUDART_H
#define PS_COMMON_CUDART_H

#include <stddef.h>

#define PS_CU_SUCCESS 0                /* cudaSuccess */
#define PS_CU_HOST_ALLOC_PORTABLE 0x01 /* cudaHostAllocPortable */
#define PS_CU_STREAM_NON_BLOCKING 0x01 /* cudaStreamNonBlocking */
#define PS_CU_EVENT_DISABLE_TIMING 0x02 /* cudaEventDisableTiming */
#define PS_CU_MEMCPY_HOST_TO_DEVICE 1  /* cudaMemcpyHostToDevice */

/* The runtime's entry points the reader calls, resolved by name. */
typedef struct ps_cudart {
    void *handle;
    int (*GetDeviceCount)(int *count);
    int (*GetLastError)(void);
    const char *(*GetErrorString)(int error);
    int (*SetDevice)(int device);
    int (*HostAlloc)(void **p, size_t bytes, unsigned flags);
    int (*FreeHost)(void *p);
    int (*StreamCreateWithFlags)(void **stream, unsigned flags);
    int (*StreamSynchronize)(void *stream);
    int (*StreamDestroy)(void *stream);
    int (*Malloc)(void **p, size_t bytes);
    int (*Free)(void *p);
    int (*EventCreateWithFlags)(void **event, unsigned flags);
    int (*EventDestroy)(void *event);
    int (*MemcpyAsync)(void *dst, const void *src, size_t bytes, int kind, void *stream);
    int (*EventRecord)(void *event, void *stream);
    int (*EventSynchronize)(void *event);
    int (*RuntimeGetVersion)(int *version);
    int version;      /* cudaRuntimeGetVersion: 1000 * major + 10 * minor */
    char path[256];   /* the name or path it was loaded as */
} ps_cudart;

/* Loads the runtime from `path` (a file name dlopen searches for, or a
 * path) and resolves every entry point. Returns 0, or -1 with the reason
 * in why[0..n) (dlopen's message, or the entry point that is missing), in
 * which case nothing stays loaded. */
int ps_cudart_load(ps_cudart *rt, const char *path, char *why, size_t n);
void ps_cudart_unload(ps_cudart *rt);

/* The process's runtime, loaded on the first call (once, thread-safe):
 * from $PAIRSHARD_CUDART when set (that file only), else the first of
 * libcudart.so.13, libcudart.so.12 and libcudart.so that loads. NULL when
 * none does; ps_cudart_status says why. */
const ps_cudart *ps_cudart_get(void);

/* One line for messages and `pairshard version`: "13.0 (libcudart.so.13,
 * dlopen)" or "not loaded (REASON)". Loads the runtime when not yet tried. */
const char *ps_cudart_status(void);

#endif /* PS_COMMON_CUDART_H */
