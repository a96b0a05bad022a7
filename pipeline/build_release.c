/*
 * pairshard build: what the build frees before its end, beside the steps
 * that are left.
 *
 * Freeing is serial work: the calling thread alone unmapped and removed
 * the worker spools before writing the manifest, and freed the validation
 * state (the report's JSON trees, the statistics) after publication:
 * about 7 ms of a 0.55 s single-thread Spider x20 build, while every
 * other core was idle. Both are dead sooner: the validation state once
 * the reports are written, the spools once every shard is written. So
 * each is freed then, on a thread of its own, while phase 2 (the
 * validation state), the manifest and publication go on (the spools'
 * files lose their names once mapped, so they are never part of the set
 * whenever their pages go); the build joins the threads before it
 * returns, so nothing outlives ps_build_run.
 */
#include "pipeline/build_internal.h"
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

static void *release_main(void *arg)
{
    ps_build_release *r = arg;
    r->fn(r->st);
    return NULL;
}

void ps_build_release_start(ps_build_release *r, void (*fn)(ps_build_state *),
                            ps_build_state *st)
{
    r->fn = fn;
    r->st = st;
    r->started = ps_thread_create(&r->thread, release_main, r, "ps-free") == 0;
    if (!r->started) /* no thread: free it here, as before */
        fn(st);
}

void ps_build_release_join(ps_build_release *r)
{
    if (r->started)
        pthread_join(r->thread, NULL);
    r->started = false;
}

void ps_build_release_validation(ps_build_state *st)
{
    /* What the summary still needs of the report: kept before it goes. */
    snprintf(st->kept_verdict, sizeof st->kept_verdict, "%s", ps_vreport_verdict(st->report));
    st->kept_summary = ps_vreport_summary(st->report);
    ps_build_validation_free(st);
}

void ps_build_validation_free(ps_build_state *st)
{
    ps_vstats_free(st->v_raw);
    ps_vstats_free(st->v_clean);
    ps_vstats_free(st->v_tok);
    ps_vpaired_free(st->paired);
    ps_vsql_free(st->v_sql);
    ps_vgen_free(st->v_gen);
    ps_vreport_free(st->report);
    st->v_raw = st->v_clean = st->v_tok = NULL;
    st->paired = NULL;
    st->v_sql = NULL;
    st->v_gen = NULL;
    st->report = NULL;
}
