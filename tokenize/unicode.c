/* HF-compatible character properties: utf8proc, corrected by the override
 * tables where HF's Rust crates use a different Unicode version. */
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <utf8proc.h>


static int category(uint32_t cp)
{
    return utf8proc_get_property((utf8proc_int32_t)cp)->category;
}

bool ps_uni_is_control(uint32_t cp)
{
    if (cp == '\t' || cp == '\n' || cp == '\r')
        return false;
    switch (category(cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
        /* Unassigned (Cn) code points are kept: HF's table has no Cn. */
        return !ps_uni_in_ranges(ps_uni_hf_not_control, ps_uni_hf_not_control_n, cp);
    default:
        return false;
    }
}

bool ps_uni_is_punctuation(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) ||
               (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
    int c = category(cp);
    if (c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO)
        return !ps_uni_in_ranges(ps_uni_hf_not_punct, ps_uni_hf_not_punct_n, cp);
    return ps_uni_in_ranges(ps_uni_hf_punct, ps_uni_hf_punct_n, cp);
}

bool ps_uni_is_chinese(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

static int cmp_mark_range(const void *key, const void *elem)
{
    uint32_t cp = *(const uint32_t *)key;
    const ps_uni_mark_range *r = elem;
    return cp < r->lo ? -1 : cp > r->hi;
}

bool ps_uni_hf_mark_differs(uint32_t cp, unsigned view)
{
    const ps_uni_mark_range *r =
        bsearch(&cp, ps_uni_hf_marks, ps_uni_hf_marks_n, sizeof *r, cmp_mark_range);
    return r && (r->views & view);
}

bool ps_uni_is_nonspacing_mark(uint32_t cp)
{
    if (category(cp) == UTF8PROC_CATEGORY_MN)
        return !ps_uni_hf_mark_differs(cp, PS_UNI_HF_NOT_MN);
    return ps_uni_in_ranges(ps_uni_hf_mn, ps_uni_hf_mn_n, cp);
}

int ps_uni_combining_class(uint32_t cp)
{
    int ccc = utf8proc_get_property((utf8proc_int32_t)cp)->combining_class;
    if (ccc && ps_uni_hf_mark_differs(cp, PS_UNI_HF_CCC_ZERO))
        return 0;
    return ccc;
}

int ps_uni_nfd(uint32_t cp, uint32_t out[4])
{
    if (cp < 0xC0 || ps_uni_in_ranges(ps_uni_hf_no_nfd, ps_uni_hf_no_nfd_n, cp)) {
        out[0] = cp;
        return 1;
    }
    utf8proc_int32_t buf[4];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, buf, 4,
                                                 UTF8PROC_DECOMPOSE, &last);
    if (n < 1 || n > 4) {
        out[0] = cp;
        return 1;
    }
    for (utf8proc_ssize_t i = 0; i < n; i++)
        out[i] = (uint32_t)buf[i];
    return (int)n;
}

int ps_uni_lowercase(uint32_t cp, uint32_t out[3])
{
    if (cp < 0x80) {
        out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
        return 1;
    }
    /* The one unconditional multi-character lowercase mapping
     * (SpecialCasing.txt), which Rust's to_lowercase applies. */
    if (cp == 0x130) {
        out[0] = 'i';
        out[1] = 0x307;
        return 2;
    }
    unsigned lo = 0, hi = ps_uni_hf_lower_n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (ps_uni_hf_lower[mid].cp == cp) {
            out[0] = ps_uni_hf_lower[mid].lower;
            return 1;
        }
        if (ps_uni_hf_lower[mid].cp < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    out[0] = (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
    return 1;
}
