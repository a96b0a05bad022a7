/* The output-path check every command that writes files runs before it
 * reads anything (see ps_outputs_check in outfile.h): an output must not
 * name another output, an input, or a file inside a shard set. */
#include "common/outfile.h"
#include "common/ps_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* True when `dir` holds pairshard's manifest.json (its "format" names
 * pairshard), i.e. is a shard set a stray output would damage. Opened
 * non-blocking and read only when regular: a FIFO there must not hang us. */
static bool is_shard_set(const char *dir)
{
    size_t n = strlen(dir) + sizeof "/manifest.json";
    char *path = malloc(n);
    if (!path)
        return false;
    snprintf(path, n, "%s/manifest.json", dir);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return false;
    struct stat st;
    enum { HEAD = 1 << 16 }; /* "format" is among the first keys */
    char *buf = malloc(HEAD);
    ssize_t got = buf && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, HEAD - 1) : -1;
    close(fd);
    bool set = got > 0;
    if (set) {
        buf[got] = '\0';
        set = strstr(buf, "\"pairshard-manifest\"") != NULL;
    }
    free(buf);
    return set;
}

typedef struct checked {
    const ps_path_use *use;
    ps_out_info info;
} checked;

static bool same_file(const ps_out_info *a, const ps_out_info *b)
{
    if (a->exists && b->exists)
        return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
    return a->target && b->target && strcmp(a->target, b->target) == 0;
}

/* Two outputs may share a character device (/dev/null) or stdout ("-"
 * twice: one stream); any other shared file would be written twice. */
static int check_pair(const checked *a, const checked *b, ps_error *err)
{
    if (!same_file(&a->info, &b->info))
        return 0;
    if (a->info.exists && S_ISCHR(a->info.st.st_mode))
        return 0;
    if (a->info.kind == PS_OUT_STDOUT && b->info.kind == PS_OUT_STDOUT)
        return 0;
    return ps_error_set(err, PS_EUSAGE, "%s %s and %s %s name the same file", b->use->what,
                        b->use->path, a->use->what, a->use->path);
}

static int check_inputs(const checked *o, const ps_path_use *ins, size_t n_ins, ps_error *err)
{
    /* Only a regular file is destroyed by being written: a FIFO, socket
     * or terminal that is both stdin and stdout is a stream, not an alias. */
    if (!o->info.exists || !S_ISREG(o->info.st.st_mode))
        return 0;
    for (size_t i = 0; i < n_ins; i++) {
        if (!ins[i].path)
            continue;
        struct stat st;
        int ok = strcmp(ins[i].path, "-") == 0 ? fstat(STDIN_FILENO, &st) : stat(ins[i].path, &st);
        if (ok == 0 && st.st_dev == o->info.st.st_dev && st.st_ino == o->info.st.st_ino)
            return ps_error_set(err, PS_EUSAGE,
                                "%s %s names the %s %s (writing it would destroy it)",
                                o->use->what, o->use->path, ins[i].what, ins[i].path);
    }
    return 0;
}

static int check_set(const checked *o, ps_error *err)
{
    if (o->info.kind != PS_OUT_FILE)
        return 0;
    char *dir = strdup(o->info.target);
    if (!dir)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    int rc = is_shard_set(slash ? dir : ".")
                 ? ps_error_set(err, PS_EUSAGE,
                                "%s %s is inside the shard set %s; write it outside the set",
                                o->use->what, o->use->path, slash ? dir : ".")
                 : 0;
    free(dir);
    return rc;
}

int ps_outputs_check(const ps_path_use *outs, size_t n_outs, const ps_path_use *ins,
                     size_t n_ins, ps_error *err)
{
    checked *c = calloc(n_outs ? n_outs : 1, sizeof *c);
    if (!c)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    int rc = 0;
    size_t done = 0;
    for (size_t i = 0; !rc && i < n_outs; i++) {
        if (!outs[i].path)
            continue;
        checked *o = &c[done];
        o->use = &outs[i];
        rc = ps_out_classify(outs[i].path, &o->info, err);
        done++;
        for (size_t j = 0; !rc && j + 1 < done; j++)
            rc = check_pair(&c[j], o, err);
        if (!rc)
            rc = check_inputs(o, ins, n_ins, err);
        if (!rc)
            rc = check_set(o, err);
    }
    for (size_t i = 0; i < done; i++)
        free(c[i].info.target);
    free(c);
    return rc;
}
