/* Atomic output files for the CLI (see outfile.h). */
#include "cli/outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ps_outfile_open(ps_outfile *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    size_t n = strlen(path) + 16;
    o->path = strdup(path);
    o->tmp = malloc(n);
    if (!o->path || !o->tmp) {
        fprintf(stderr, "pairshard: out of memory\n");
        ps_outfile_abort(o);
        return -1;
    }
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        fprintf(stderr, "pairshard: cannot create %s: %s\n", o->tmp, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        ps_outfile_abort(o);
        return -1;
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        close(fd);
        ps_outfile_abort(o);
        return -1;
    }
    setvbuf(o->f, NULL, _IOFBF, 1 << 20);
    return 0;
}

int ps_outfile_commit(ps_outfile *o)
{
    if (!o->f)
        return 0;
    if (o->f == stdout) {
        o->f = NULL;
        if (fflush(stdout) != 0) {
            fprintf(stderr, "pairshard: writing to stdout failed: %s\n", strerror(errno));
            return -1;
        }
        return 0;
    }
    int bad = fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0;
    int e = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (bad || rename(o->tmp, o->path) != 0) {
        if (!bad)
            e = errno;
        fprintf(stderr, "pairshard: cannot write %s: %s\n", o->path, strerror(e));
        ps_outfile_abort(o);
        return -1;
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return 0;
}

void ps_outfile_abort(ps_outfile *o)
{
    if (o->f && o->f != stdout)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}
