/*
 * NFC, NFD, NFKC and NFKD as HF's normalizers compute them.
 *
 * HF calls `unicode-normalization-alignments` (a fork of
 * unicode-normalization with Unicode 9 tables) on the whole string: full
 * decomposition, canonical reordering (a stable sort of each run of
 * non-starters by combining class), then, for the composed forms, the
 * standard recomposition. We run the same three steps on code points, with
 * utf8proc's data corrected where Unicode 9 differs (override tables: a
 * character HF does not decompose, a combining class HF does not know, a
 * composite HF cannot form). The text is rebuilt from the first non-ASCII
 * byte on (one character earlier for the composed forms, since an ASCII
 * letter can compose with a mark after it); ASCII before it is unchanged.
 */
#include "tokenize/norm.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* Most code points one character decomposes into (U+FDFA: 18). */
#define DECOMP_MAX 32

/* Full decomposition of cp (canonical, or compatibility with `compat`). */
static int decompose_cp(uint32_t cp, bool compat, uint32_t out[DECOMP_MAX])
{
    if (!compat || cp < 0xA0 || ps_uni_in_ranges(ps_uni_hf_no_nfkd, ps_uni_hf_no_nfkd_n, cp))
        return ps_uni_nfd(cp, out);
    if (ps_uni_in_ranges(ps_uni_hf_no_nfd, ps_uni_hf_no_nfd_n, cp)) {
        out[0] = cp;
        return 1;
    }
    utf8proc_int32_t buf[DECOMP_MAX];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, buf, DECOMP_MAX,
                                                 UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, &last);
    if (n < 1 || n > DECOMP_MAX) {
        out[0] = cp;
        return 1;
    }
    for (utf8proc_ssize_t i = 0; i < n; i++)
        out[i] = (uint32_t)buf[i];
    return (int)n;
}

/* Stable sort of v[0..n) by combining class: insertion for the usual
 * short runs, a counting sort (linear) for long hostile ones. `scratch`
 * holds n code points. */
static void sort_run(uint32_t *v, size_t n, uint32_t *scratch)
{
    if (n < 2)
        return;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            uint32_t c = v[i];
            int k = ps_uni_combining_class(c);
            size_t j = i;
            while (j > 0 && ps_uni_combining_class(v[j - 1]) > k) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = c;
        }
        return;
    }
    size_t start[257] = {0};
    for (size_t i = 0; i < n; i++)
        start[ps_uni_combining_class(v[i]) + 1]++;
    for (int k = 1; k <= 256; k++)
        start[k] += start[k - 1];
    for (size_t i = 0; i < n; i++)
        scratch[start[ps_uni_combining_class(v[i])]++] = v[i];
    memcpy(v, scratch, n * sizeof *v);
}

/* The primary composite of a + b (b of combining class ccc) in HF's
 * tables, or 0. */
static uint32_t compose_pair(uint32_t a, uint32_t b, int ccc)
{
    enum { LB = 0x1100, VB = 0x1161, TB = 0x11A7, SB = 0xAC00, LN = 19, VN = 21, TN = 28 };
    if (a - LB < LN && b - VB < VN)
        return SB + ((a - LB) * VN + (b - VB)) * TN;
    if (a - SB < LN * VN * TN && (a - SB) % TN == 0 && b - TB - 1 < TN - 1)
        return a + (b - TB);
    /* No composition has a second character below U+0300; jamo compose
     * only as above (utf8proc would join LV + U+11A7, which is no T). */
    if (b < 0x300 || (b >= 0x1100 && b <= 0x11FF))
        return 0;
    /* The second character of every other composition is a mark: one with
     * a combining class, or a vowel or length sign (Mc/Mn) of class 0.
     * Ruling out the rest here (CJK, letters) spares utf8proc's search. */
    if (ccc == 0) {
        int cat = utf8proc_get_property((utf8proc_int32_t)b)->category;
        if (cat != UTF8PROC_CATEGORY_MN && cat != UTF8PROC_CATEGORY_MC &&
            cat != UTF8PROC_CATEGORY_ME)
            return 0;
    }
    utf8proc_int32_t pair[2] = {(utf8proc_int32_t)a, (utf8proc_int32_t)b};
    if (utf8proc_normalize_utf32(pair, 2, UTF8PROC_COMPOSE | UTF8PROC_STABLE) != 1)
        return 0;
    uint32_t r = (uint32_t)pair[0];
    /* a composite newer than HF's tables: HF does not decompose it either */
    if (ps_uni_in_ranges(ps_uni_hf_no_nfd, ps_uni_hf_no_nfd_n, r))
        return 0;
    return r;
}

/* Nothing below U+0300 has a combining class (the common case, cheaply). */
static int ccc_of(uint32_t cp) { return cp < 0x300 ? 0 : ps_uni_combining_class(cp); }

/* Canonical composition of v[0..n) in place (unicode-normalization's
 * Recompositions): a character joins the last starter unless a character
 * between them has a class >= its own (or is a starter). Returns the new
 * length. */
static size_t compose(uint32_t *v, size_t n)
{
    size_t w = 0, starter = SIZE_MAX;
    int last = -1; /* class of the last character kept after the starter */
    for (size_t r = 0; r < n; r++) {
        uint32_t c = v[r];
        int ccc = ccc_of(c);
        if (starter != SIZE_MAX && (last < 0 || last < ccc)) {
            uint32_t comp = compose_pair(v[starter], c, ccc);
            if (comp) {
                v[starter] = comp;
                continue;
            }
        }
        if (ccc == 0) {
            starter = w;
            last = -1;
        } else {
            last = ccc;
        }
        v[w++] = c;
    }
    return w;
}

/* Decomposes s[0..n) into tmp as code points; returns their count. */
static int decompose_all(const unsigned char *s, size_t n, bool compat, ps_tok_buf *tmp,
                         size_t *count)
{
    size_t k = 0;
    tmp->len = 0;
    for (size_t i = 0; i < n;) {
        if (tmp->cap < (k + DECOMP_MAX) * 4 + 1) {
            tmp->len = k * 4;
            if (ps_tok_buf_reserve(tmp, (n - i) * 4 + DECOMP_MAX * 4))
                return PS_ENOMEM;
        }
        uint32_t *v = (uint32_t *)(void *)tmp->p;
        if (s[i] < 0x80) { /* ASCII between the rest: nothing decomposes */
            v[k++] = s[i++];
            continue;
        }
        uint32_t cp;
        unsigned len = ps_tok_utf8_decode(s + i, n - i, &cp);
        if (!len) { /* not valid UTF-8 (the caller's promise broken): the byte
                     * is taken as U+0080..U+00FF, never read past */
            cp = s[i];
            len = 1;
        }
        i += len;
        k += (size_t)decompose_cp(cp, compat, v + k);
    }
    *count = k;
    tmp->len = k * 4;
    return PS_OK;
}

/* Sorts each run of non-starters in v[0..n) (tmp holds v; grows it for
 * scratch space when a run is long). */
static int reorder(ps_tok_buf *tmp, size_t n)
{
    uint32_t *v = (uint32_t *)(void *)tmp->p;
    for (size_t i = 0; i < n;) {
        if (ccc_of(v[i]) == 0) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < n && ccc_of(v[j]) != 0)
            j++;
        if (j - i > 32) {
            tmp->len = n * 4;
            if (ps_tok_buf_reserve(tmp, (j - i) * 4))
                return PS_ENOMEM;
            v = (uint32_t *)(void *)tmp->p;
        }
        sort_run(v + i, j - i, v + n);
        i = j;
    }
    return PS_OK;
}

int ps_norm_nf_apply(ps_nf_form form, ps_tok_buf *io, ps_tok_buf *tmp)
{
    const unsigned char *s = (const unsigned char *)io->p;
    size_t n = io->len, i = 0;
    while (i < n && s[i] < 0x80)
        i++;
    if (i == n)
        return PS_OK; /* ASCII is invariant under every form */
    bool composes = form == PS_NF_C || form == PS_NF_KC;
    size_t start = composes && i > 0 ? i - 1 : i;
    size_t k;
    int rc = decompose_all(s + start, n - start, form == PS_NF_KC || form == PS_NF_KD, tmp, &k);
    if (!rc)
        rc = reorder(tmp, k);
    if (rc)
        return rc;
    uint32_t *v = (uint32_t *)(void *)tmp->p;
    if (composes)
        k = compose(v, k);
    io->len = start;
    if (ps_tok_buf_reserve(io, k * 4))
        return PS_ENOMEM;
    char *o = io->p + start;
    for (size_t j = 0; j < k; j++)
        o += ps_utf8_encode(v[j], o);
    io->len = (size_t)(o - io->p);
    io->p[io->len] = '\0';
    return PS_OK;
}

bool ps_uni_is_combining_mark(uint32_t cp)
{
    switch (utf8proc_get_property((utf8proc_int32_t)cp)->category) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
        return !ps_uni_hf_mark_differs(cp, PS_UNI_HF_NOT_MARK);
    default:
        return ps_uni_in_ranges(ps_uni_hf_mark, ps_uni_hf_mark_n, cp);
    }
}

/* ---- the four normalizers ---------------------------------------------- */

typedef struct nf_norm {
    ps_tok_norm base;
    ps_nf_form form;
} nf_norm;

static int nf_apply(const ps_tok_norm *n, ps_tok_buf *io, ps_tok_buf *tmp)
{
    return ps_norm_nf_apply(((const nf_norm *)n)->form, io, tmp);
}

static void nf_destroy(ps_tok_norm *n) { free(n); }

int ps_norm_nf_load(ps_nf_form form, ps_tok_norm **out)
{
    nf_norm *n = (nf_norm *)ps_norm_new(sizeof *n, nf_apply, nf_destroy);
    if (!n)
        return PS_ENOMEM;
    n->form = form;
    *out = &n->base;
    return PS_OK;
}
