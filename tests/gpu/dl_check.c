/* dl_check: the reader's GPU path through a CUDA runtime it loads itself.
 *
 *   dl_check DIR [DEVICE]
 *
 * Linked with a pairshard library only, never with libcudart (run.sh checks
 * its NEEDED list): opens DIR with `device` DEVICE (default 0) and
 * require_device, reads one epoch, and checks that the reader used the
 * device with pinned slots, copied bytes to it (h2d_bytes), delivered every
 * record, and that libcudart is mapped into the process, which only the
 * reader's dlopen can have done. Exits 0 when all hold, 1 otherwise, 77
 * when the reader finds no device (no runtime, driver or GPU: "skipped").
 * Prints one line of JSON. */
#include <pairshard/reader.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether /proc/self/maps names a file containing `name`. */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int hit = 0;
    if (!f)
        return 0;
    while (!hit && fgets(line, sizeof line, f))
        hit = strstr(line, name) != NULL;
    fclose(f);
    return hit;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: dl_check DIR [DEVICE]\n");
        return 2;
    }
    int cudart_before = mapped("libcudart");
    ps_error err;
    ps_error_clear(&err);
    ps_reader_options o;
    ps_reader_options_init(&o);
    o.rank = 0;
    o.world_size = 1;
    o.batch_size = 64;
    o.device = argc == 3 ? atoi(argv[2]) : 0;
    o.require_device = 1;
    ps_reader *r = NULL;
    int rc = ps_reader_open(argv[1], &o, NULL, &r, &err);
    if (rc == PS_EUSAGE && strstr(err.message, "is not available")) {
        printf("{\"skipped\":\"%s\"}\n", err.message);
        return 77;
    }
    if (rc < 0) {
        fprintf(stderr, "dl_check: %s\n", err.message);
        return 1;
    }
    ps_reader_info info;
    ps_reader_get_info(r, &info);
    uint64_t records = 0;
    int on_device = 1;
    const ps_batch *b;
    while ((rc = ps_reader_next(r, &b, &err)) == 1) {
        records += b->B;
        on_device &= b->device == o.device && b->d_input_ids && b->ready_event;
        ps_batch_release(r, b);
    }
    ps_reader_stats st;
    ps_reader_get_stats(r, &st);
    ps_reader_close(r);
    if (rc < 0) {
        fprintf(stderr, "dl_check: %s\n", err.message);
        return 1;
    }
    int dl = !cudart_before && mapped("libcudart");
    int ok = dl && on_device && info.device == o.device && info.pinned &&
             st.h2d_bytes > 0 && records == info.records_per_epoch;
    printf("{\"cudart_dlopened\":%s,\"device\":%d,\"pinned\":%s,\"batches_on_device\":%s,"
           "\"records\":%" PRIu64 ",\"h2d_bytes\":%" PRIu64 ",\"ok\":%s}\n",
           dl ? "true" : "false", info.device, info.pinned ? "true" : "false",
           on_device ? "true" : "false", records, st.h2d_bytes, ok ? "true" : "false");
    return ok ? 0 : 1;
}
