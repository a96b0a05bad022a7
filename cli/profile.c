/* cli/profile.c — the --profile table of pairshard build. */
#include "cli/profile.h"

#include <time.h>

double ps_cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double ps_cli_amdahl(double serial, double threads)
{
    return 1.0 / (serial + (1.0 - serial) / threads);
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

void ps_cli_print_build_profile(FILE *f, const ps_build_profile *pf,
                                const ps_cli_command_times *ct)
{
    /* The command's wall: the build's and what the command does alone
     * around it, which no thread count shares either. */
    double around = ct->before + ct->after, w = pf->wall + around;
    double serial = pf->serial + around;
    double fraction = w > 0 ? serial / w : 0;
    fprintf(f, "profile: wall %.3f s (the command; the build %.3f s)\n", w, pf->wall);
    fprintf(f, "profile:   tokenizer       %7.3f s %5.1f%%  (before the build: the options read, "
               "the vocabulary loaded)\n",
            ct->before, pct(ct->before, w));
    fprintf(f, "profile:   set-up          %7.3f s %5.1f%%\n", pf->setup, pct(pf->setup, w));
    fprintf(f, "profile:   phase 1         %7.3f s %5.1f%%  (read, clean, tokenize, commit)\n",
            pf->phase1, pct(pf->phase1, w));
    fprintf(f, "profile:     reading        %7.3f s  calling thread, filling chunks\n", pf->read);
    fprintf(f, "profile:     committing     %7.3f s  calling thread, in input order\n",
            pf->commit);
    fprintf(f, "profile:     waiting        %7.3f s  calling thread, for workers\n", pf->wait);
    if (pf->stats > 0 || pf->write > 0) {
        fprintf(f, "profile:     statistics     %7.3f s  a thread of its own, behind the commit\n",
                pf->stats);
        fprintf(f, "profile:     writing        %7.3f s  rejects and spools, a thread of its own\n",
                pf->write);
    }
    if (pf->calling_worker)
        fprintf(f, "profile:     cleaning       %7.3f s  calling thread (1 thread: no worker "
                   "beside it)\n",
                pf->worker_busy[0]);
    for (size_t i = 0; !pf->calling_worker && i < pf->workers && i < PS_BUILD_PROFILE_THREADS;
         i++)
        fprintf(f, "profile:     worker %-3zu     %7.3f s busy, %.3f s waiting\n", i,
                pf->worker_busy[i], pf->worker_wait[i]);
    fprintf(f, "profile:   checks          %7.3f s %5.1f%%  (buckets; validation and reports %s)\n",
            pf->checks, pct(pf->checks, w),
            pf->calling_worker ? "too" : "beside phase 2");
    if (pf->checks_threaded > 0)
        fprintf(f, "profile:     KS sums        %7.3f s  exact p-values, over the threads\n",
                pf->checks_threaded);
    if (pf->reports_threaded > 0)
        fprintf(f, "profile:     labels' JSON   %7.3f s  the reports' per-label entries, over the "
                   "threads\n",
                pf->reports_threaded);
    fprintf(f, "profile:   phase 2         %7.3f s %5.1f%%  (shards; %.3f s compressing, all "
               "threads)\n",
            pf->phase2, pct(pf->phase2, w), pf->phase2_encode);
    /* seconds of the shard writers, summed: several write at once when
     * there are several threads and shards */
    fprintf(f, "profile:     writers        %7zu    shards written at once\n",
            pf->phase2_writers);
    fprintf(f, "profile:     grouping       %7.3f s  shard writers, records by bucket\n",
            pf->phase2_sort);
    fprintf(f, "profile:     storing        %7.3f s  shard writers, blocks into LMDB\n",
            pf->phase2_put);
    fprintf(f, "profile:     finishing      %7.3f s  commit, compacted copy (hashed as written), "
               "fsync\n",
            pf->phase2_finish);
    fprintf(f, "profile:   manifest+publish %6.3f s %5.1f%%\n", pf->publish,
            pct(pf->publish, w));
    fprintf(f, "profile:   teardown        %7.3f s %5.1f%%  (after publishing: what is left "
               "freed, the tokenizer too)\n",
            pf->teardown + ct->after, pct(pf->teardown + ct->after, w));
    fprintf(f, "profile: serial %.3f s = %.1f%% of wall (work no worker shares); Amdahl "
               "projection %.2fx at 2, %.2fx at 16 threads\n",
            serial, 100 * fraction, ps_cli_amdahl(fraction, 2), ps_cli_amdahl(fraction, 16));
    double cf = pf->cpu_process > 0 ? pf->cpu_calling / pf->cpu_process : 0;
    if (pf->calling_worker) { /* one thread does everything: no serial share to read off */
        fprintf(f, "profile: cpu: calling thread %.3f s of the process's %.3f s (1 thread: it "
                   "does the work; the inputs' hashes are computed beside it)\n",
                pf->cpu_calling, pf->cpu_process);
        return;
    }
    fprintf(f, "profile: cpu: calling thread %.3f s of the process's %.3f s = %.1f%% (serial CPU "
               "work; other processes do not inflate it); Amdahl projection %.2fx at 16 threads\n",
            pf->cpu_calling, pf->cpu_process, 100 * cf, cf > 0 ? ps_cli_amdahl(cf, 16) : 0.0);
}
