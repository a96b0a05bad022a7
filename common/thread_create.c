/*
 * Threads started with a name, so a profile or `top -H` tells a build's
 * threads apart. The new thread names itself before it runs its body: a
 * name set from outside could land on another thread, should this one
 * have ended and its id been reused, and naming inside the body would
 * rename the calling thread wherever a body also runs inline (a fallback,
 * or the caller taking a share of the work).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "common/ps_internal.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct start {
    void *(*fn)(void *);
    void *arg;
    char name[16]; /* the kernel's limit, its NUL included */
} start;

static void *named_main(void *p)
{
    start s = *(start *)p;
    free(p);
    (void)pthread_setname_np(pthread_self(), s.name); /* ERANGE: kept unnamed */
    return s.fn(s.arg);
}

int ps_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
    start *s = malloc(sizeof *s);
    if (!s) /* named or not, the thread is what matters */
        return pthread_create(t, NULL, fn, arg);
    s->fn = fn;
    s->arg = arg;
    snprintf(s->name, sizeof s->name, "%s", name);
    int rc = pthread_create(t, NULL, named_main, s);
    if (rc != 0)
        free(s);
    return rc;
}
