/* report/dump_labels.c — a statistics member's text with its per-label
 * entries serialised on several threads.
 *
 * Most of report.json and stats.json is the points' and the paired view's
 * "labels" arrays: an object per label, each with its histograms. jansson
 * dumps an array without indentation as "[" e0 ", " e1 ... "]", and a
 * nested value alone as inside its parent, so the elements can be dumped
 * apart, on threads, and joined: the same bytes as one json_dumps. */
#include "report/report.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LABELS_MARK "\x01pairshard-labels\x01"
#define DUMP_THREADS_MAX 64

typedef struct dump_job {
    const json_t *arr;
    size_t flags, n;
    char **parts;
    atomic_size_t next;
    atomic_bool failed;
} dump_job;

/* Dumps elements until none is left (each thread, the caller's too). */
static void *dump_elements(void *arg)
{
    dump_job *j = arg;
    for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
        j->parts[i] = json_dumps(json_array_get(j->arr, i), j->flags | JSON_ENCODE_ANY);
        if (!j->parts[i])
            atomic_store(&j->failed, true);
    }
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The elements of `arr` dumped on up to `threads` threads (those that
 * cannot start leave their share to the others). 0, or -1 when one could
 * not be dumped (out of memory); parts[] is filled either way. */
static int dump_parts(dump_job *j, size_t threads)
{
    pthread_t th[DUMP_THREADS_MAX];
    size_t started = 0;
    if (threads > j->n)
        threads = j->n;
    if (threads > DUMP_THREADS_MAX)
        threads = DUMP_THREADS_MAX;
    for (; started + 1 < threads; started++)
        if (ps_thread_create(&th[started], dump_elements, j, "ps-labels") != 0)
            break;
    dump_elements(j);
    for (size_t k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    return atomic_load(&j->failed) ? -1 : 0;
}

/* "[" parts joined by ", " "]" in place of the marker's text in `outer`:
 * NULL when the marker is not there exactly once, or out of memory. */
static char *join_into(const char *outer, const char *mark, char *const *parts, size_t n)
{
    const char *at = strstr(outer, mark);
    if (!at || strstr(at + 1, mark))
        return NULL;
    size_t ml = strlen(mark), len = strlen(outer) - ml + 2;
    for (size_t i = 0; i < n; i++)
        len += strlen(parts[i]) + (i ? 2 : 0);
    char *out = malloc(len + 1), *o = out;
    if (!out)
        return NULL;
    memcpy(o, outer, (size_t)(at - outer));
    o += at - outer;
    *o++ = '[';
    for (size_t i = 0; i < n; i++) {
        if (i) {
            memcpy(o, ", ", 2);
            o += 2;
        }
        size_t pl = strlen(parts[i]);
        memcpy(o, parts[i], pl);
        o += pl;
    }
    *o++ = ']';
    strcpy(o, at + ml);
    return out;
}

/* The object `m` with its "labels" member replaced by the marker,
 * dumped, and the marker's own dumped text (*mark): NULL when out of
 * memory. */
static char *dump_outer(const json_t *m, size_t flags, char **mark)
{
    json_t *o = json_copy((json_t *)m), *mk = json_string(LABELS_MARK);
    *mark = mk ? json_dumps(mk, flags | JSON_ENCODE_ANY) : NULL;
    char *text = NULL;
    if (o && *mark && json_object_set(o, "labels", mk) == 0)
        text = json_dumps(o, flags);
    json_decref(o);
    json_decref(mk);
    return text;
}

char *ps_report_dump_labels(const json_t *m, size_t flags, size_t threads, double *seconds)
{
    json_t *arr = json_is_object(m) ? json_object_get(m, "labels") : NULL;
    size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
    if (n < 2 || !(flags & JSON_PRESERVE_ORDER) || (flags & (JSON_INDENT(31) | JSON_COMPACT)))
        return json_dumps(m, flags); /* not an array whose elements are worth splitting */
    char *mark = NULL, *outer = dump_outer(m, flags, &mark);
    char **parts = calloc(n, sizeof *parts);
    char *out = NULL;
    if (outer && parts) {
        dump_job j = {.arr = arr, .flags = flags, .n = n, .parts = parts};
        atomic_init(&j.next, 0);
        atomic_init(&j.failed, false);
        double t = now();
        int rc = dump_parts(&j, threads ? threads : 1);
        if (seconds)
            *seconds += now() - t;
        if (rc == 0)
            out = join_into(outer, mark, parts, n);
    }
    for (size_t i = 0; parts && i < n; i++)
        free(parts[i]);
    free(parts);
    free(outer);
    free(mark);
    return out ? out : json_dumps(m, flags); /* a label named like the marker, or memory */
}
