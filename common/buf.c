/* Growable, NUL-terminated byte buffer. */
#include "common/ps_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

void ps_mem_hint_huge(void *p, size_t n)
{
    uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(HUGE_PAGE - 1);
    if (p && hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

void ps_buf_init(ps_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void ps_buf_free(ps_buf *b)
{
    free(b->data);
    ps_buf_init(b);
}

int ps_buf_reserve(ps_buf *b, size_t extra)
{
    size_t need;
    if (!ps_size_add(b->len, extra, &need) || !ps_size_add(need, 1, &need))
        return PS_ENOMEM;
    if (need <= b->cap)
        return PS_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p)
        return PS_ENOMEM;
    b->data = p;
    b->cap = cap;
    if (cap >= 2 * HUGE_PAGE)
        ps_mem_hint_huge(p, cap);
    return PS_OK;
}

int ps_buf_append(ps_buf *b, const void *p, size_t n)
{
    int rc = ps_buf_reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return PS_OK;
}

int ps_buf_putc(ps_buf *b, char c) { return ps_buf_append(b, &c, 1); }

int ps_buf_puts(ps_buf *b, const char *s) { return ps_buf_append(b, s, strlen(s)); }

int ps_buf_printf(ps_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return PS_EINVAL;
    if ((size_t)n < sizeof tmp)
        return ps_buf_append(b, tmp, (size_t)n);
    int rc = ps_buf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return PS_OK;
}

int ps_buf_put_u64(ps_buf *b, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return ps_buf_append(b, tmp + sizeof tmp - n, n);
}

const char *ps_path_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

char *ps_dir_name(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    return n > b ? strndup(dir + b, n - b) : strdup("set");
}

int ps_array_grow(void *items, size_t *cap, size_t n, size_t size, size_t first)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : first;
    if (nc < *cap || nc > SIZE_MAX / size)
        return PS_ENOMEM;
    if (ps_array_resize(items, nc, size))
        return PS_ENOMEM;
    *cap = nc;
    return 0;
}

int ps_array_resize(void *pp, size_t n, size_t size)
{
    void *old, *nv;
    if (size && n > SIZE_MAX / size)
        return PS_ENOMEM;
    memcpy(&old, pp, sizeof old); /* pp is a T **, not a void ** */
    nv = realloc(old, n * size);
    if (!nv)
        return PS_ENOMEM;
    memcpy(pp, &nv, sizeof nv);
    return 0;
}

char *ps_strndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *ps_strdup_opt(const char *s)
{
    return s ? ps_strndup(s, strlen(s)) : NULL;
}
