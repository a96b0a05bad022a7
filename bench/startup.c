/* startup: what a trainer pays to start reading. In one fresh process:
 * dlopen(LIB) (the library and everything it needs), then ps_reader_open
 * of SET and its first batch. Prints "dlopen_ms open_ms first_batch_ms
 * cpu_ms", the last the process's CPU time (all threads, the loader's
 * start included), which a loaded machine disturbs less than wall time.
 * bench/bench_startup.sh runs it many times per library and takes medians.
 *
 *   startup LIB SET */
#include <pairshard/reader.h>

#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef int (*init_fn)(ps_reader_options *, size_t);
typedef int (*open_fn)(const char *, const ps_reader_options *, const ps_reader_state *,
                       ps_reader **, ps_error *);
typedef int (*next_fn)(ps_reader *, const ps_batch **, ps_error *);
typedef void (*release_fn)(ps_reader *, const ps_batch *);
typedef void (*close_fn)(ps_reader *);

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: startup LIB SET\n");
        return 2;
    }
    double t0 = now_ms();
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "startup: %s\n", dlerror());
        return 1;
    }
    double t1 = now_ms();
    init_fn init;
    open_fn open_;
    next_fn next;
    release_fn release;
    close_fn close_;
    *(void **)&init = dlsym(h, "ps_reader_options_init_size");
    *(void **)&open_ = dlsym(h, "ps_reader_open");
    *(void **)&next = dlsym(h, "ps_reader_next");
    *(void **)&release = dlsym(h, "ps_batch_release");
    *(void **)&close_ = dlsym(h, "ps_reader_close");
    if (!init || !open_ || !next || !release || !close_) {
        fprintf(stderr, "startup: %s lacks the reader's functions\n", argv[1]);
        return 1;
    }
    ps_reader_options o;
    init(&o, sizeof o);
    o.rank = 0;
    o.world_size = 1;
    ps_reader *r = NULL;
    ps_error err;
    if (open_(argv[2], &o, NULL, &r, &err) < 0) {
        fprintf(stderr, "startup: %s\n", err.message);
        return 1;
    }
    double t2 = now_ms();
    const ps_batch *b;
    if (next(r, &b, &err) != 1) {
        fprintf(stderr, "startup: no first batch\n");
        return 1;
    }
    double t3 = now_ms();
    struct timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    release(r, b);
    close_(r);
    printf("%.3f %.3f %.3f %.3f\n", t1 - t0, t2 - t1, t3 - t2, cpu.tv_sec * 1e3 + cpu.tv_nsec / 1e6);
    return 0;
}
