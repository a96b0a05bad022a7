/* Tests of the CUDA runtime loaded at run time (common/cudart.c) and the
 * reader's host fallback without it: $PAIRSHARD_CUDART names a missing file
 * for the whole process (set before anything loads), so the reader has no
 * runtime, falls back to host memory with the exact records of the set, and
 * require_device refuses naming why. A library that is no CUDA runtime is
 * refused; where a real libcudart is installed it loads (dlopen, not a link:
 * the test binary does not need it), and where the toolkit's header is,
 * common/cudart.h's constants are checked against it. */
#include "tests/support/reader_fixture.h"

#include "common/cudart.h"
#include "reader/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if PS_TEST_CUDA_HEADERS
#include <cuda_runtime_api.h>
/* The declarations common/cudart.h makes instead of including this header. */
_Static_assert(PS_CU_SUCCESS == cudaSuccess, "cudaSuccess");
_Static_assert(PS_CU_HOST_ALLOC_PORTABLE == cudaHostAllocPortable, "cudaHostAllocPortable");
_Static_assert(PS_CU_STREAM_NON_BLOCKING == cudaStreamNonBlocking, "cudaStreamNonBlocking");
_Static_assert(PS_CU_EVENT_DISABLE_TIMING == cudaEventDisableTiming, "cudaEventDisableTiming");
_Static_assert(PS_CU_MEMCPY_HOST_TO_DEVICE == cudaMemcpyHostToDevice, "cudaMemcpyHostToDevice");
_Static_assert(sizeof(cudaError_t) == sizeof(int), "cudaError_t is an int");
_Static_assert(sizeof(cudaStream_t) == sizeof(void *), "cudaStream_t is a pointer");
_Static_assert(sizeof(cudaEvent_t) == sizeof(void *), "cudaEvent_t is a pointer");
#endif

#define MISSING "/nonexistent/pairshard-test/libcudart.so.13"

static void test_missing_runtime(void **state)
{
    (void)state;
    assert_null(ps_cudart_get());
    assert_int_equal(ps_dev_count(), 0);
    const char *st = ps_cudart_status();
    assert_non_null(strstr(st, "not loaded (PAIRSHARD_CUDART=" MISSING));
    /* `pairshard version` and manifests say so too */
    char text[2048];
    assert_true(ps_dependency_versions(text, sizeof text) > 0);
    assert_non_null(strstr(text, "\ncuda not loaded (PAIRSHARD_CUDART="));
    /* no pinned memory without a runtime: plain, 64-byte aligned */
    int how = -1;
    void *p = ps_dev_host_alloc(4096, 1, 0, &how);
    assert_non_null(p);
    assert_int_equal(how, 0);
    assert_int_equal((uintptr_t)p % 64, 0);
    ps_dev_host_free(p, 4096, how);
    ps_error err;
    ps_error_clear(&err);
    assert_int_equal(ps_dev_select(0, &err), PS_EUSAGE);
    assert_non_null(strstr(err.message, "PAIRSHARD_CUDART=" MISSING));
}

static void test_host_fallback(void **state)
{
    (void)state;
    ps_reader_options o;
    base_opts(&o);
    o.device = 0;
    ps_reader_info in;
    ps_reader *r = open_info(g_ref.dir, &o, &in);
    assert_int_equal(in.device, PS_DEVICE_HOST);
    assert_int_equal(in.pinned, 0);
    /* host batches; a device required is refused, saying the runtime did
     * not load */
    ps_error err;
    expect_host_fallback(r, g_ref.dir, &o, &err);
    assert_non_null(strstr(err.message, "CUDA device 0 is not available (0 devices; CUDA runtime "
                                        "not loaded (PAIRSHARD_CUDART=" MISSING));
    /* a whole epoch: every record once, each batch equal to the decode */
    run rn;
    epoch_run(g_ref.dir, &o, &rn);
    expect_exact(&rn, 1);
    assert_int_equal(rn.errors, 0);
    run_free(&rn);
}

static void test_load_refusals(void **state)
{
    (void)state;
    ps_cudart rt;
    char why[512];
    assert_int_equal(ps_cudart_load(&rt, MISSING, why, sizeof why), -1);
    assert_non_null(strstr(why, MISSING));
    assert_null(rt.handle);
    /* a library that loads but is no CUDA runtime (zlib: linked by this
     * binary, so present) */
    assert_int_equal(ps_cudart_load(&rt, "libz.so.1", why, sizeof why), -1);
    assert_non_null(strstr(why, "libz.so.1: no cudaGetDeviceCount (not a CUDA runtime)"));
    assert_null(rt.handle);
    assert_null(rt.GetDeviceCount);
}

/* A real libcudart, where installed: every entry point resolves and the
 * runtime reports its version; a device count is an answer or an error
 * (no driver, no GPU), never a crash. */
static void test_real_runtime(void **state)
{
    (void)state;
    static const char *names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so"};
    ps_cudart rt;
    char why[512];
    size_t i = 0;
    while (i < 3 && ps_cudart_load(&rt, names[i], why, sizeof why) != 0)
        i++;
    if (i == 3) {
        print_message("no libcudart on this host (%s)\n", why);
        skip();
    }
    assert_true(rt.version >= 1000);
    assert_string_equal(rt.path, names[i]);
    int n = -1;
    int e = rt.GetDeviceCount(&n);
    assert_true(e != PS_CU_SUCCESS || n >= 0);
    assert_non_null(rt.GetErrorString(e));
    ps_cudart_unload(&rt);
    assert_null(rt.handle);
}

int main(void)
{
    alarm(600);
    /* before anything loads the runtime: this process has none */
    setenv("PAIRSHARD_CUDART", MISSING, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_runtime),
        cmocka_unit_test(test_host_fallback),
        cmocka_unit_test(test_load_refusals),
        cmocka_unit_test(test_real_runtime),
    };
    return cmocka_run_group_tests_name("cudart", tests, reader_fixture_setup,
                                       reader_fixture_teardown);
}
