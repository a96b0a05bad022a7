/*
 * Shared by the libFuzzer targets: a private scratch directory per fuzzing
 * process, and writing the input to a file in it for the APIs that read
 * paths (the cleaner, the tokenizer.json loader, the manifest reader, the
 * LMDB checker).
 */
#ifndef PS_FUZZ_UTIL_H
#define PS_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directory, created on first use and removed at exit. */
static char fuzz_dir_path[4096];
static char fuzz_file_path[4200];

static void fuzz_dir_remove(void)
{
    if (fuzz_file_path[0])
        unlink(fuzz_file_path);
    if (fuzz_dir_path[0])
        rmdir(fuzz_dir_path);
}

static const char *fuzz_dir(void)
{
    if (!fuzz_dir_path[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/psfuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(fuzz_dir_path)) {
            perror("mkdtemp");
            abort(); /* the harness cannot run at all: not a finding */
        }
        atexit(fuzz_dir_remove);
    }
    return fuzz_dir_path;
}

/* Writes data to DIR/name (replacing it) and returns the path (static). */
static const char *fuzz_write(const char *name, const uint8_t *data, size_t size)
{
    snprintf(fuzz_file_path, sizeof fuzz_file_path, "%s/%s", fuzz_dir(), name);
    int fd = open(fuzz_file_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(fuzz_file_path);
        abort();
    }
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            perror(fuzz_file_path);
            abort();
        }
        off += (size_t)w;
    }
    close(fd);
    return fuzz_file_path;
}

/* A library error must come with a message: check it is a terminated
 * string of bounded length (reading it all lets ASan see a bad one). */
#define FUZZ_CHECK_ERROR(rc, err)                                                              \
    do {                                                                                       \
        if ((rc) < 0 && strnlen((err).message, sizeof (err).message) >= sizeof (err).message) \
            abort();                                                                           \
    } while (0)

#endif
