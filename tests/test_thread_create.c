/* Threads started by ps_thread_create (common/thread_create.c): the new
 * thread carries the name it was given, as top -H and perf show it, from
 * before its body runs; the creator keeps its own name; a name longer than
 * the kernel's 15 bytes is cut to them; the body's argument and result
 * pass through. */
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
    char seen[32]; /* the name the thread read for itself, first thing */
} probe;

static void *read_own_name(void *arg)
{
    probe *p = arg;
    if (pthread_getname_np(pthread_self(), p->seen, sizeof p->seen) != 0)
        strcpy(p->seen, "(unreadable)");
    return p;
}

/* Starts read_own_name under `name`; returns what it saw. */
static const char *run_named(probe *p, const char *name)
{
    memset(p, 0, sizeof *p);
    pthread_t t;
    void *result = NULL;
    assert_int_equal(ps_thread_create(&t, read_own_name, p, name), 0);
    assert_int_equal(pthread_join(t, &result), 0);
    assert_ptr_equal(result, p); /* argument in, result out */
    return p->seen;
}

static void test_thread_carries_its_name(void **state)
{
    (void)state;
    char before[32], after[32];
    assert_int_equal(pthread_getname_np(pthread_self(), before, sizeof before), 0);
    probe p;
    assert_string_equal(run_named(&p, "ps-zstd"), "ps-zstd");
    assert_string_equal(run_named(&p, "ps-checks"), "ps-checks");
    assert_int_equal(pthread_getname_np(pthread_self(), after, sizeof after), 0);
    assert_string_equal(after, before); /* the creator is not renamed */
}

static void test_long_name_is_cut_to_the_kernels_limit(void **state)
{
    (void)state;
    probe p;
    assert_string_equal(run_named(&p, "a-name-longer-than-fifteen-bytes"), "a-name-longer-t");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_carries_its_name),
        cmocka_unit_test(test_long_name_is_cut_to_the_kernels_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
