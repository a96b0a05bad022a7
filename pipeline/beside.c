/* Reports beside DIR on a stopped build or merge (see beside.h). */
#include "pipeline/beside.h"
#include "common/ps_internal.h"
#include "pipeline/build_internal.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

static const char *const BESIDE[] = {"report.json", "report.html", "stats.json",
                                       "rejects.jsonl"};
#define N_BESIDE (sizeof BESIDE / sizeof *BESIDE)

int ps_beside_outputs_check(const char *out_dir, const ps_path_use *ins, size_t n_ins,
                            ps_error *err)
{
    char parent[4096], prefix[512], paths[N_BESIDE][4096 + 600];
    ps_path_beside(out_dir, parent, sizeof parent, prefix, sizeof prefix);
    struct stat st;
    if (stat(parent, &st) != 0 && errno == ENOENT)
        return 0; /* the build creates it: nothing there yet to collide with */
    ps_path_use outs[N_BESIDE];
    for (size_t i = 0; i < N_BESIDE; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s%s", parent, prefix, BESIDE[i]);
        outs[i] = (ps_path_use){"the report file", paths[i]};
    }
    return ps_outputs_check(outs, N_BESIDE, ins, n_ins, err);
}

int ps_beside_write(const char *dir, const char *name, const char *data, size_t len,
                    ps_error *err)
{
    char path[4096 + 600];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return ps_error_set(err, PS_EIO, "%s: path too long", dir);
    return ps_outfile_write_all(path, data, len, err);
}
