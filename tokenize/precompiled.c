/*
 * SentencePiece's Precompiled normalizer ("precompiled_charsmap"), as HF
 * tokenizers 0.23.2 runs it (normalizers/precompiled.rs over the
 * spm_precompiled 0.1.4 crate).
 *
 * The charsmap is base64 of: u32 trie_size (LE), trie_size/4 LE u32 units of
 * a darts-clone double array, then a pool of NUL-terminated replacement
 * strings (bytes from 4 + 4*(trie_size/4) on, so trie_size % 4 stray bytes
 * belong to the pool). A key's value is an offset into the pool.
 *
 * Normalization walks the text by extended grapheme clusters. A cluster of
 * fewer than 6 bytes is looked up whole; otherwise, or when that misses,
 * each of its characters is looked up alone; a hit is replaced by its pool
 * string, a miss kept. "Looked up" is darts' common-prefix search keeping
 * the FIRST (shortest) matching prefix, so a cluster whose first character
 * is a key becomes that character's replacement and loses the rest (e.g. a
 * full-width letter plus a combining accent): HF's behaviour, kept on
 * purpose. A NUL byte ends the key.
 *
 * HF indexes the array and slices the pool without checks and panics
 * (aborting the process) on a bad blob, on "" and on null. We refuse those
 * at load with PS_EFORMAT: every array position any key of up to 5 bytes can
 * reach is checked, and so is every value it can yield.
 */
#include "tokenize/hf.h"
#include "tokenize/norm.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#define PC_MAX_KEY 5 /* HF looks up clusters of < 6 bytes, characters of <= 4 */

typedef struct pc_norm {
    ps_tok_norm base; /* first: the normalizer interface */
    uint32_t *units;
    size_t n_units;
    char *pool; /* replacement strings, NUL-separated */
    size_t pool_len;
    /* ASCII characters on their own: pool offset of the replacement, -1 to
     * keep the character. */
    int32_t ascii[128];
    uint32_t ascii_len[128];
} pc_norm;

/* darts-clone unit fields, as spm_precompiled reads them. */
static inline bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static inline uint32_t unit_value(uint32_t u) { return u & 0x7FFFFFFFu; }
static inline uint32_t unit_label(uint32_t u) { return u & 0x800000FFu; }
static inline size_t unit_offset(uint32_t u)
{
    return (size_t)(u >> 10) << ((u & (1u << 9)) >> 6);
}

/* The replacement of key k[0..n): the first prefix of k that the trie holds
 * (1) with its pool string at *off, *len; or 0. The blob was validated, so
 * no index leaves the array. */
static int transform(const pc_norm *p, const unsigned char *k, size_t n, size_t *off,
                     size_t *len)
{
    size_t pos = unit_offset(p->units[0]);
    for (size_t i = 0; i < n && k[i]; i++) {
        pos ^= k[i];
        uint32_t u = p->units[pos];
        if (unit_label(u) != k[i])
            return 0;
        pos ^= unit_offset(u);
        if (unit_has_leaf(u)) {
            size_t v = unit_value(p->units[pos]);
            const char *z = memchr(p->pool + v, 0, p->pool_len - v);
            *off = v;
            *len = z ? (size_t)(z - (p->pool + v)) : p->pool_len - v;
            return 1;
        }
    }
    return 0;
}

/* Code points HF's unicode-segmentation (Unicode 17) never breaks before
 * (Grapheme_Cluster_Break Extend or SpacingMark) that utf8proc's older
 * tables do not know. Found by comparing utf8proc with node's
 * Intl.Segmenter (ICU 78, Unicode 17) on every scalar value; on the BMP the
 * list is exactly where tokenizers@0.23.2 itself differs (unigram_model.js
 * checks every scalar value after a key character). */
static const ps_uni_range hf_new_extend[] = {
    {0x897, 0x897},     {0x1ACF, 0x1ADD},   {0x1AE0, 0x1AEB},   {0x10D69, 0x10D6D},
    {0x10EFA, 0x10EFC}, {0x113B8, 0x113C0}, {0x113C2, 0x113C2}, {0x113C5, 0x113C5},
    {0x113C7, 0x113CA}, {0x113CC, 0x113D0}, {0x113D2, 0x113D2}, {0x113E1, 0x113E2},
    {0x11B60, 0x11B67}, {0x11F5A, 0x11F5A}, {0x1611E, 0x1612F}, {0x1E5EE, 0x1E5EF},
    {0x1E6E3, 0x1E6E3}, {0x1E6E6, 0x1E6E6}, {0x1E6EE, 0x1E6EF}, {0x1E6F5, 0x1E6F5},
};


static bool is_control_class(uint32_t cp)
{
    int bc = utf8proc_get_property((utf8proc_int32_t)cp)->boundclass;
    return bc == UTF8PROC_BOUNDCLASS_CONTROL || bc == UTF8PROC_BOUNDCLASS_CR ||
           bc == UTF8PROC_BOUNDCLASS_LF;
}

/* Whether HF's segmentation breaks between a and b: utf8proc's answer,
 * corrected where Unicode 16 and 17 changed the properties (U+113D1 became
 * Prepend, U+11A3A stopped being one). */
static bool hf_break(uint32_t a, uint32_t b, utf8proc_int32_t *state)
{
    if (ps_uni_in_ranges(hf_new_extend, sizeof hf_new_extend / sizeof *hf_new_extend, b)) {
        *state = 0;
        return is_control_class(a); /* GB4 before GB9 */
    }
    if (a == 0x113D1 || a == 0x11A3A) {
        *state = 0;
        return (a == 0x11A3A || is_control_class(b)) ? utf8proc_grapheme_break(0x61, b)
                                                     : false; /* GB9b */
    }
    return utf8proc_grapheme_break_stateful((utf8proc_int32_t)a, (utf8proc_int32_t)b, state);
}

/* Byte length of the extended grapheme cluster starting at s[i]. */
static size_t cluster_len(const unsigned char *s, size_t n, size_t i)
{
    uint32_t a = 0, b = 0;
    unsigned l = ps_tok_utf8_decode(s + i, n - i, &a);
    size_t k = i + (l ? l : 1); /* the text is valid UTF-8; never loop if not */
    utf8proc_int32_t state = 0; /* safe to reset after a break (utf8proc.h) */
    while (k < n) {
        l = ps_tok_utf8_decode(s + k, n - k, &b);
        if (!l || hf_break(a, b, &state))
            break;
        a = b;
        k += l;
    }
    return k - i;
}

/* Normalizes the cluster g[0..n) into out. */
static int put_cluster(const pc_norm *p, const unsigned char *g, size_t n, ps_tok_buf *out)
{
    size_t off, len;
    if (n <= PC_MAX_KEY && transform(p, g, n, &off, &len))
        return ps_tok_buf_put(out, p->pool + off, len);
    for (size_t i = 0; i < n;) {
        size_t l = ps_tok_utf8_decode(g + i, n - i, &(uint32_t){0});
        l = l ? l : 1;
        int rc = transform(p, g + i, l, &off, &len) ? ps_tok_buf_put(out, p->pool + off, len)
                                                    : ps_tok_buf_put(out, g + i, l);
        if (rc < 0)
            return rc;
        i += l;
    }
    return PS_OK;
}

static int pc_apply(const ps_tok_norm *nb, ps_tok_buf *io, ps_tok_buf *tmp)
{
    const pc_norm *p = (const pc_norm *)nb;
    const unsigned char *s = (const unsigned char *)io->p;
    size_t n = io->len;
    if (n == 0)
        return PS_OK;
    tmp->len = 0;
    if (ps_tok_buf_reserve(tmp, n))
        return PS_ENOMEM;
    for (size_t i = 0; i < n;) {
        /* A run of ASCII characters the charsmap keeps, each followed by
         * ASCII or the end (so each is a cluster of its own): copied whole. */
        size_t j = i;
        while (j < n && s[j] < 0x80 && p->ascii[s[j]] < 0 && (j + 1 == n || s[j + 1] < 0x80))
            j++;
        if (j > i) {
            if (ps_tok_buf_put(tmp, s + i, j - i))
                return PS_ENOMEM;
            i = j;
            continue;
        }
        unsigned char c = s[i];
        int rc;
        /* Another lone ASCII character (CR LF is one cluster): by table. */
        if (c < 0x80 && (i + 1 == n || (s[i + 1] < 0x80 && !(c == '\r' && s[i + 1] == '\n')))) {
            rc = ps_tok_buf_put(tmp, p->pool + p->ascii[c], p->ascii_len[c]);
            i++;
        } else {
            size_t l = cluster_len(s, n, i);
            rc = put_cluster(p, s + i, l, tmp);
            i += l;
        }
        if (rc < 0)
            return rc;
    }
    tmp->p[tmp->len] = '\0';
    ps_tok_buf t = *io;
    *io = *tmp;
    *tmp = t;
    return PS_OK;
}

static void pc_destroy(ps_tok_norm *nb)
{
    pc_norm *p = (pc_norm *)nb;
    if (!p)
        return;
    free(p->units);
    free(p->pool);
    free(p);
}

/* ---- loading ---------------------------------------------------------- */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 as the crate's decoder takes it: padding optional (but
 * never past a multiple of 4), no whitespace, zero trailing bits. Writes
 * into out (room for n*3/4 bytes); returns the length or -1. */
static long b64_decode(const char *in, size_t n, unsigned char *out)
{
    size_t data = n;
    while (data > 0 && in[data - 1] == '=')
        data--;
    size_t rem = data % 4;
    if (rem == 1 || (n > data && (rem == 0 || n - data > 4 - rem)))
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < data; i++) {
        int v = b64_value((unsigned char)in[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (uint32_t)v;
        if (i % 4 == 3) {
            out[o++] = (unsigned char)(acc >> 16);
            out[o++] = (unsigned char)(acc >> 8);
            out[o++] = (unsigned char)acc;
            acc = 0;
        }
    }
    if (rem == 2) {
        if (acc & 0xF)
            return -1;
        out[o++] = (unsigned char)(acc >> 4);
    } else if (rem == 3) {
        if (acc & 0x3)
            return -1;
        out[o++] = (unsigned char)(acc >> 10);
        out[o++] = (unsigned char)(acc >> 2);
    }
    return (long)o;
}

/* Checks the value of a leaf reached at array position `pos`: 0, or 1 with
 * *why set. */
static int check_leaf(const pc_norm *p, size_t pos, const char **why)
{
    if (pos >= p->n_units) {
        *why = "a leaf's value lies outside the trie";
        return 1;
    }
    size_t v = unit_value(p->units[pos]);
    if (v > p->pool_len || (v < p->pool_len && ((unsigned char)p->pool[v] & 0xC0) == 0x80)) {
        *why = "a value points outside the replacement strings or inside a character";
        return 1;
    }
    return 0;
}

/* Visits every array position a key of up to PC_MAX_KEY non-NUL bytes can
 * reach (breadth first, each base once at its least depth) and checks that
 * every index HF would read is in range. */
static int check_trie(const pc_norm *p, const char **why)
{
    size_t n = p->n_units;
    size_t *queue = malloc(n * sizeof *queue);
    unsigned char *depth = malloc(n);
    uint8_t *seen = calloc((n + 7) / 8, 1);
    int rc = (queue && depth && seen) ? 0 : PS_ENOMEM;
    size_t head = 0, tail = 0, root = unit_offset(p->units[0]);
    if (rc == 0 && root >= n) {
        *why = "the root's offset lies outside the trie";
        rc = 1;
    } else if (rc == 0) {
        queue[tail++] = root;
        depth[root] = 0;
        seen[root / 8] |= (uint8_t)(1u << (root % 8));
    }
    while (rc == 0 && head < tail) {
        size_t base = queue[head++];
        for (unsigned c = 1; c < 256 && rc == 0; c++) {
            size_t idx = base ^ c;
            if (idx >= n) {
                *why = "a child's position lies outside the trie";
                rc = 1;
                break;
            }
            uint32_t u = p->units[idx];
            if (unit_label(u) != c)
                continue;
            size_t next = idx ^ unit_offset(u);
            if (unit_has_leaf(u) && check_leaf(p, next, why))
                rc = 1;
            else if (depth[base] + 1 < PC_MAX_KEY) {
                if (next >= n) {
                    *why = "a node's offset lies outside the trie";
                    rc = 1;
                } else if (!(seen[next / 8] & (1u << (next % 8)))) {
                    seen[next / 8] |= (uint8_t)(1u << (next % 8));
                    depth[next] = (unsigned char)(depth[base] + 1);
                    queue[tail++] = next;
                }
            }
        }
    }
    free(queue);
    free(depth);
    free(seen);
    return rc;
}

/* Splits the decoded blob into the array and the pool and validates them. */
static int parse_blob(pc_norm *p, const unsigned char *b, size_t len, const char **why)
{
    if (len < 4) {
        *why = len ? "shorter than its 4-byte trie size" : "empty";
        return 1;
    }
    size_t size = (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
    p->n_units = size / 4;
    if (p->n_units == 0 || p->n_units > (len - 4) / 4) {
        *why = p->n_units ? "the trie is truncated" : "the trie is empty";
        return 1;
    }
    p->units = malloc(p->n_units * sizeof *p->units);
    size_t at = 4 + 4 * p->n_units;
    p->pool_len = len - at;
    p->pool = malloc(p->pool_len + 1);
    if (!p->units || !p->pool)
        return PS_ENOMEM;
    for (size_t i = 0; i < p->n_units; i++) {
        const unsigned char *q = b + 4 + 4 * i;
        p->units[i] = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
                      (uint32_t)q[3] << 24;
    }
    memcpy(p->pool, b + at, p->pool_len);
    p->pool[p->pool_len] = '\0';
    for (size_t i = 0; i < p->pool_len;) {
        unsigned l = ps_tok_utf8_decode(b + at + i, p->pool_len - i, &(uint32_t){0});
        if (!l) {
            *why = "the replacement strings are not valid UTF-8";
            return 1;
        }
        i += l;
    }
    return check_trie(p, why);
}

static int decode_member(const ps_tok_load *c, pc_norm *p, json_t *j, const char *jpath)
{
    char where[256];
    ps_tok_jpath_key(where, sizeof where, jpath, "precompiled_charsmap");
    json_t *v = json_object_get(j, "precompiled_charsmap");
    if (!json_is_string(v))
        return ps_tok_load_fail(c, PS_EFORMAT, where,
                                "expected a base64 string (HF tokenizers aborts on %s)",
                                v ? "this" : "a missing one");
    size_t n = json_string_length(v);
    unsigned char *blob = malloc(n / 4 * 3 + 3);
    if (!blob)
        return PS_ENOMEM;
    long len = b64_decode(json_string_value(v), n, blob);
    const char *why = "not valid base64";
    int rc = len < 0 ? 1 : parse_blob(p, blob, (size_t)len, &why);
    free(blob);
    if (rc == 1)
        return ps_tok_load_fail(c, PS_EFORMAT, where,
                                "not a usable charsmap: %s (HF tokenizers aborts on it)", why);
    return rc;
}

int ps_tok_precompiled_load(const ps_tok_load *c, json_t *j, const char *jpath,
                            ps_tok_norm **out)
{
    *out = NULL;
    if (!json_is_object(j))
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "expected an object");
    pc_norm *p = (pc_norm *)ps_norm_new(sizeof *p, pc_apply, pc_destroy);
    if (!p)
        return PS_ENOMEM;
    int rc = decode_member(c, p, j, jpath);
    if (rc < 0) {
        if (rc == PS_ENOMEM)
            ps_tok_load_fail(c, rc, jpath, "out of memory");
        pc_destroy(&p->base);
        return rc;
    }
    for (unsigned ch = 0; ch < 128; ch++) {
        unsigned char k = (unsigned char)ch;
        size_t off, len;
        p->ascii[ch] = -1;
        if (transform(p, &k, 1, &off, &len)) {
            p->ascii[ch] = (int32_t)off;
            p->ascii_len[ch] = (uint32_t)len;
        }
    }
    *out = &p->base;
    return PS_OK;
}
