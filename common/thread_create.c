/*
 * Threads started with a name, so a profile or `top -H` tells a build's
 * threads apart. Named by the creator rather than by the thread itself:
 * a thread body that also runs inline on the calling thread (a fallback,
 * or the caller taking a share) never renames the caller.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "common/ps_internal.h"

int ps_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
    int rc = pthread_create(t, NULL, fn, arg);
    if (rc == 0)
        (void)pthread_setname_np(*t, name);
    return rc;
}
