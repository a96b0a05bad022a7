/*
 * Where utf8proc 2.8 (Unicode 15) and the Unicode 9 tables of HF's
 * `unicode-normalization-alignments` disagree beyond what
 * unicode_overrides.c already corrects, these lists hold HF's answer.
 * Measured by running the binding's normalizers on every code point
 * (tests/conformance/normalizers.js repeats the comparison, so a stale
 * entry fails the suite). Sorted ascending; ranges are inclusive.
 */
#include "tokenize/norm.h"

/* compatibility decompositions newer than HF's tables: NFKD leaves whole */
const ps_uni_range ps_uni_hf_no_nfkd[] = {
    {0, 0},
};
const unsigned ps_uni_hf_no_nfkd_n = 0;
/* General_Category M* in utf8proc, not a combining mark for HF */
const ps_uni_range ps_uni_hf_not_mark[] = {
    {0, 0},
};
const unsigned ps_uni_hf_not_mark_n = 0;
/* a combining mark for HF, not M* in utf8proc */
const ps_uni_range ps_uni_hf_mark[] = {
    {0, 0},
};
const unsigned ps_uni_hf_mark_n = 0;
