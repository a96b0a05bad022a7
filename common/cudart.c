/*
 * Loading the CUDA runtime at run time (common/cudart.h). The process
 * loads it once and never unloads it: device pointers, streams and events
 * of readers that outlive any one call belong to it, and a trainer's own
 * CUDA (torch) shares the same libcudart when the sonames agree.
 */
#include "common/cudart.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Newest first: a host with CUDA 13 and 12 side by side gets 13. */
static const char *const default_names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};

#define ENTRY(field, name) {offsetof(ps_cudart, field), "cuda" name}
static const struct {
    size_t off;
    const char *name;
} entries[] = {
    ENTRY(GetDeviceCount, "GetDeviceCount"),
    ENTRY(GetLastError, "GetLastError"),
    ENTRY(GetErrorString, "GetErrorString"),
    ENTRY(SetDevice, "SetDevice"),
    ENTRY(HostAlloc, "HostAlloc"),
    ENTRY(FreeHost, "FreeHost"),
    ENTRY(StreamCreateWithFlags, "StreamCreateWithFlags"),
    ENTRY(StreamSynchronize, "StreamSynchronize"),
    ENTRY(StreamDestroy, "StreamDestroy"),
    ENTRY(Malloc, "Malloc"),
    ENTRY(Free, "Free"),
    ENTRY(EventCreateWithFlags, "EventCreateWithFlags"),
    ENTRY(EventDestroy, "EventDestroy"),
    ENTRY(MemcpyAsync, "MemcpyAsync"),
    ENTRY(EventRecord, "EventRecord"),
    ENTRY(EventSynchronize, "EventSynchronize"),
    ENTRY(RuntimeGetVersion, "RuntimeGetVersion"),
};
#undef ENTRY

int ps_cudart_load(ps_cudart *rt, const char *path, char *why, size_t n)
{
    memset(rt, 0, sizeof *rt);
    /* RTLD_LOCAL: the runtime's symbols stay out of the global scope, so
     * loading it changes nothing for the rest of the process. */
    rt->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!rt->handle) {
        const char *e = dlerror();
        snprintf(why, n, "%s", e ? e : path);
        return -1;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *f = dlsym(rt->handle, entries[i].name);
        if (!f) {
            snprintf(why, n, "%s: no %s (not a CUDA runtime)", path, entries[i].name);
            ps_cudart_unload(rt);
            return -1;
        }
        /* POSIX: a function pointer read from dlsym's void *. */
        memcpy((char *)rt + entries[i].off, &f, sizeof f);
    }
    if (rt->RuntimeGetVersion(&rt->version) != PS_CU_SUCCESS)
        rt->version = 0;
    snprintf(rt->path, sizeof rt->path, "%s", path);
    return 0;
}

void ps_cudart_unload(ps_cudart *rt)
{
    if (rt->handle)
        dlclose(rt->handle);
    memset(rt, 0, sizeof *rt);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static ps_cudart g_rt;
static int g_loaded;
static char g_status[512];

static void load_once(void)
{
    char why[400] = "";
    const char *env = getenv("PAIRSHARD_CUDART");
    if (env && *env) {
        g_loaded = ps_cudart_load(&g_rt, env, why, sizeof why) == 0;
        if (!g_loaded) {
            snprintf(g_status, sizeof g_status, "not loaded (PAIRSHARD_CUDART=%s: %s)", env, why);
            return;
        }
    } else {
        for (size_t i = 0; !g_loaded && i < sizeof default_names / sizeof *default_names; i++)
            g_loaded = ps_cudart_load(&g_rt, default_names[i], why, sizeof why) == 0;
        if (!g_loaded) {
            /* the last name's reason: libcudart.so, the most general */
            snprintf(g_status, sizeof g_status, "not loaded (%s)", why);
            return;
        }
    }
    snprintf(g_status, sizeof g_status, "%d.%d (%s, dlopen)", g_rt.version / 1000,
             g_rt.version % 1000 / 10, g_rt.path);
}

const ps_cudart *ps_cudart_get(void)
{
    pthread_once(&once, load_once);
    return g_loaded ? &g_rt : NULL;
}

const char *ps_cudart_status(void)
{
    pthread_once(&once, load_once);
    return g_status;
}
