/* Threads started by ps_thread_create (common/thread_create.c): the new
 * thread carries the name it was given, as top -H and perf show it; the
 * creator keeps its own; a name the kernel refuses (over 15 bytes) leaves
 * the thread started and running all the same. */
#define _GNU_SOURCE /* pthread_getname_np */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "common/ps_internal.h"

#include <pthread.h>
#include <string.h>

typedef struct {
    pthread_barrier_t named; /* the creator has named the thread */
    char seen[32];           /* the name the thread read for itself */
    int ran;
} probe;

static void *read_own_name(void *arg)
{
    probe *p = arg;
    pthread_barrier_wait(&p->named);
    if (pthread_getname_np(pthread_self(), p->seen, sizeof p->seen) != 0)
        strcpy(p->seen, "(unreadable)");
    p->ran = 1;
    return NULL;
}

/* Starts read_own_name under `name` and returns what it saw. */
static void run_named(probe *p, const char *name)
{
    memset(p, 0, sizeof *p);
    assert_int_equal(pthread_barrier_init(&p->named, NULL, 2), 0);
    pthread_t t;
    assert_int_equal(ps_thread_create(&t, read_own_name, p, name), 0);
    pthread_barrier_wait(&p->named); /* ps_thread_create has returned: named */
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_barrier_destroy(&p->named);
    assert_int_equal(p->ran, 1);
}

static void test_thread_carries_its_name(void **state)
{
    (void)state;
    char before[32], after[32];
    assert_int_equal(pthread_getname_np(pthread_self(), before, sizeof before), 0);
    probe p;
    run_named(&p, "ps-zstd");
    assert_string_equal(p.seen, "ps-zstd");
    assert_int_equal(pthread_getname_np(pthread_self(), after, sizeof after), 0);
    assert_string_equal(after, before); /* the creator is not renamed */
    assert_string_not_equal(after, "ps-zstd");
}

static void test_refused_name_still_starts_the_thread(void **state)
{
    (void)state;
    probe p;
    run_named(&p, "a-name-longer-than-fifteen-bytes"); /* ERANGE from the kernel */
    assert_string_not_equal(p.seen, "a-name-longer-than-fifteen-bytes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_carries_its_name),
        cmocka_unit_test(test_refused_name_still_starts_the_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
