/* Tests of validate/: the statistics against scipy. The reference is
 * $PS_VALIDATE_REF (written by tests/cli/validate_scipy.sh), else computed
 * here by tests/validate_ref.py with Debian's python3-scipy; the test skips
 * only when /usr/bin/python3 cannot import scipy and numpy, naming the
 * packages (a skip CI counts as a failure: tests/skips-allowed.txt). Shared
 * helpers: tests/support/validate_fixture.c. */
#include "tests/support/validate_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- scipy reference (tests/cli/validate_scipy.sh) ---------------------------- */

typedef struct maxerr {
    const char *name;
    double worst;
    size_t n;
} maxerr;

static void rel_check(maxerr *m, double got, double want, const char *what, size_t i)
{
    double e;
    if (got == want)
        e = 0;
    else
        e = fabs(got - want) / fmax(fabs(want), 1e-300);
    if (e > m->worst)
        m->worst = e;
    m->n++;
    if (!(e <= 1e-9))
        fail_msg("%s case %zu: got %.17g, scipy %.17g (relative error %.3g)", what, i, got, want, e);
}

static double *num_array(json_t *a, size_t *n)
{
    *n = json_array_size(a);
    double *v = calloc(*n + 1, sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < *n; i++)
        v[i] = json_number_value(json_array_get(a, i));
    return v;
}

static void hist_of(json_t *values, uint64_t *h)
{
    memset(h, 0, PS_VBINS * sizeof *h);
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v) h[ps_vbin_of((uint32_t)json_integer_value(v))]++;
}

#define PY "/usr/bin/python3" /* Debian's, where python3-scipy installs */

/* The reference scipy computes now (or computed for the same inputs, in
 * the build's cache), into a file under a new directory (*dir, to
 * remove); NULL (after printing why) when scipy is missing. */
static char *compute_reference(char **dir)
{
    if (system(PY " -c 'import scipy, numpy' 2>/dev/null") != 0) {
        printf("# python3-scipy or python3-numpy is not installed for " PY
               " (Debian packages; scripts/install-deps.sh installs them)\n");
        return NULL;
    }
    *dir = ps_test_tmpdir("ps-scipy-ref");
    assert_non_null(*dir);
    char *out = malloc(strlen(*dir) + 16);
    assert_non_null(out);
    sprintf(out, "%s/ref.json", *dir);
    char spider[4096];
    snprintf(spider, sizeof spider, "%s", ps_test_data("spider"));
    /* under make test, the build's cache: tests/cli/validate_scipy.sh wants
     * the same answers, which scipy takes ~12 s to compute (validate_ref.py) */
    const char *build = getenv("PS_BUILD");
    char cache[4200] = "";
    if (build && *build)
        snprintf(cache, sizeof cache, " '%s/cache'", build);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, PY " '%s' '%s' '%s'%s", ps_test_data("../validate_ref.py"), spider,
             out, cache);
    if (system(cmd) != 0)
        fail_msg("%s failed", cmd);
    return out;
}

static void test_scipy_reference(void **state)
{
    (void)state;
    char *own = NULL, *own_dir = NULL;
    const char *path = getenv("PS_VALIDATE_REF");
    if (!path || !*path) {
        path = own = compute_reference(&own_dir);
        if (!own)
            skip();
    }
    json_error_t je;
    json_t *ref = json_load_file(path, 0, &je);
    if (!ref)
        fail_msg("%s: %s", path, je.text);
    maxerr M[] = {{"ks_d", 0, 0},   {"ks_p", 0, 0},   {"kstwo_sf", 0, 0}, {"chi2", 0, 0},
                  {"chi2_p", 0, 0}, {"chi2_sf", 0, 0}, {"cramers_v", 0, 0}, {"js_distance", 0, 0},
                  {"psi", 0, 0}};
    static uint64_t h1[PS_VBINS], h2[PS_VBINS];
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(ref, "ks"), i, c)
    {
        hist_of(json_object_get(c, "x"), h1);
        hist_of(json_object_get(c, "y"), h2);
        uint64_t n1 = json_array_size(json_object_get(c, "x")), n2 = json_array_size(json_object_get(c, "y"));
        double d = ps_sm_ks_d(h1, h2, PS_VBINS);
        rel_check(&M[0], d, json_real_value(json_object_get(c, "d")), "ks_d", i);
        rel_check(&M[1], ps_sm_ks_2samp_p(d, n1, n2), json_real_value(json_object_get(c, "p")), "ks_p", i);
    }
    json_array_foreach(json_object_get(ref, "kstwo"), i, c)
    {
        uint64_t n = (uint64_t)json_integer_value(json_array_get(c, 0));
        double x = json_real_value(json_array_get(c, 1)), sf = json_real_value(json_array_get(c, 2));
        if (sf < 1e-290) /* below double's comfortable range: both round to ~0 */
            continue;
        double one = ps_sm_kolmogn_sf(n, x), three = ps_sm_kolmogn_sf_threads(n, x, 3);
        rel_check(&M[2], one, sf, "kstwo_sf", i);
        if (memcmp(&one, &three, sizeof one) != 0) /* the threaded sum keeps the bits */
            fail_msg("kstwo_sf case %zu: %.17g with 1 thread, %.17g with 3", i, one, three);
    }
    json_array_foreach(json_object_get(ref, "chi2"), i, c)
    {
        size_t na, nb;
        double *a = num_array(json_object_get(c, "a"), &na), *b = num_array(json_object_get(c, "b"), &nb);
        assert_int_equal(na, nb);
        uint64_t *ua = calloc(na + 1, sizeof *ua), *ub = calloc(na + 1, sizeof *ub);
        for (size_t k = 0; k < na; k++) {
            ua[k] = (uint64_t)a[k];
            ub[k] = (uint64_t)b[k];
        }
        double chi2, dof, p, v;
        ps_sm_chi2_homogeneity(ua, ub, na, &chi2, &dof, &p, &v);
        rel_check(&M[3], chi2, json_real_value(json_object_get(c, "chi2")), "chi2", i);
        assert_true(dof == json_number_value(json_object_get(c, "dof")));
        double pw = json_real_value(json_object_get(c, "p"));
        if (pw >= 1e-290)
            rel_check(&M[4], p, pw, "chi2_p", i);
        rel_check(&M[6], v, json_real_value(json_object_get(c, "v")), "cramers_v", i);
        rel_check(&M[7], ps_sm_js_distance(a, b, na), json_real_value(json_object_get(c, "js")), "js", i);
        rel_check(&M[8], ps_sm_psi(a, b, na, json_real_value(json_object_get(c, "eps"))),
                  json_real_value(json_object_get(c, "psi")), "psi", i);
        free(a);
        free(b);
        free(ua);
        free(ub);
    }
    json_array_foreach(json_object_get(ref, "chi2sf"), i, c)
    {
        double df = json_number_value(json_array_get(c, 0)), x = json_number_value(json_array_get(c, 1)),
               sf = json_real_value(json_array_get(c, 2));
        if (sf < 1e-290)
            continue;
        rel_check(&M[5], ps_sm_chi2_sf(x, df), sf, "chi2_sf", i);
    }
    const char *out = getenv("PS_VALIDATE_REF_OUT");
    FILE *f = out && *out ? fopen(out, "w") : NULL;
    for (size_t k = 0; k < sizeof M / sizeof M[0]; k++) {
        printf("# %-12s %5zu cases, max relative error %.3g\n", M[k].name, M[k].n, M[k].worst);
        if (f)
            fprintf(f, "%s %zu %.6g\n", M[k].name, M[k].n, M[k].worst);
        assert_true(M[k].n > 0);
    }
    if (f)
        fclose(f);
    json_decref(ref);
    if (own) {
        unlink(own);
        rmdir(own_dir);
        free(own);
        free(own_dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scipy_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
