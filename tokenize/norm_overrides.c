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
    {0x32FF, 0x32FF},   /* SQUARE ERA NAME REIWA (Unicode 12.1) */
    {0xA7F2, 0xA7F4},   /* modifier capitals C, F, Q (14.0) */
    {0xAB69, 0xAB69},   /* MODIFIER LETTER SMALL TURNED W (13.0) */
    {0x10781, 0x10785}, /* Latin Extended-F modifiers (14.0) */
    {0x10787, 0x107B0},
    {0x107B2, 0x107BA},
    {0x1E030, 0x1E06D}, /* Cyrillic Extended-D modifiers (15.0) */
    {0x1F16C, 0x1F16C}, /* RAISED MR SIGN (12.0) */
    {0x1FBF0, 0x1FBF9}, /* SEGMENTED DIGITS (13.0) */
};
const unsigned ps_uni_hf_no_nfkd_n = 9;
/* a combining mark for HF, not M* in utf8proc */
const ps_uni_range ps_uni_hf_mark[] = {
    {0x1CF2, 0x1CF3}, /* Vedic signs: Mc in Unicode 9, Lo since 10 */
};
const unsigned ps_uni_hf_mark_n = 1;
