/*
 * Added tokens of a tokenizer.json ("added_tokens"), as tokenizers 0.23.2's
 * AddedVocabulary: how they get their ids at load, and how they are split
 * out of text before the model sees it.
 *
 * Ids. HF ignores the "id" written in the file (it only warns when it
 * differs): the tokens are added in file order, and each takes the id its
 * content already has (an earlier added token, then the model's vocabulary)
 * or else the next free id, counting from the model's vocabulary size. A
 * later token with the content of an earlier one takes its id and replaces
 * its flags. Without a model (model NULL) the file's ids are used.
 *
 * Matching. Two sets of patterns: tokens with normalized=false match the raw
 * text, the others match normalized text with their content normalized at
 * load. HF runs a leftmost-longest Aho-Corasick automaton; the matches it
 * reports are exactly those of a walk down a byte trie from each position
 * (the first position with a match wins, and its longest pattern), resumed
 * at the match's end. A first-byte table skips the positions where no
 * pattern can start, so plain text costs one table lookup per byte whatever
 * the number of tokens. A match refused by single_word is still consumed,
 * as in HF (the automaton has moved past it).
 */
#include "tokenize/hf.h"
#include "tokenize/added_internal.h"
#include "tokenize/unicode.h"

#include <stdlib.h>
#include <utf8proc.h>
#include <string.h>

void ps_tok_added_free(ps_tok_added *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++) {
        free(a->toks[i].content);
        free(a->toks[i].normed);
    }
    free(a->toks);
    for (size_t i = 0; i < a->n_map; i++)
        free(a->map[i].content);
    free(a->map);
    for (int k = 0; k < 2; k++) {
        ps_tok_trie_free(&a->trie[k]);
    }
    free(a);
}

/* ---- lookups ---------------------------------------------------------- */

static int map_cmp(const void *x, const void *y)
{
    const ps_tok_added_name *a = x, *b = y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->content, b->content, n);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

int32_t ps_tok_added_find(const ps_tok_added *a, const char *s, size_t n)
{
    if (!a || !a->n_map)
        return -1;
    ps_tok_added_name key = {(char *)s, n, 0, false};
    const ps_tok_added_name *hit = bsearch(&key, a->map, a->n_map, sizeof key, map_cmp);
    return hit ? hit->id : -1;
}

static int tok_cmp(const void *x, const void *y)
{
    const ps_tok_added_tok *a = x, *b = y;
    return (a->id > b->id) - (a->id < b->id);
}

static const ps_tok_added_tok *by_id(const ps_tok_added *a, int32_t id)
{
    if (!a || !a->n)
        return NULL;
    ps_tok_added_tok key = {.id = id};
    return bsearch(&key, a->toks, a->n, sizeof key, tok_cmp);
}

/* HF's simple_id_to_token: the normalized form when the content changed
 * under the normalizer (so a decoder can invert it), else the content.
 * "special" is HF's is_special_token of that string: a special token whose
 * normalized form differs is not one (HF's set holds the contents). */
const char *ps_tok_added_token(const ps_tok_added *a, int32_t id, bool *special)
{
    const ps_tok_added_tok *t = by_id(a, id);
    if (!t)
        return NULL;
    const char *s = t->normed ? t->normed : t->content;
    if (special)
        *special = ps_tok_added_is_special(a, s, strlen(s));
    return s;
}

bool ps_tok_added_is_special(const ps_tok_added *a, const char *s, size_t n)
{
    if (!a || !a->n_map)
        return false;
    ps_tok_added_name key = {(char *)s, n, 0, false};
    const ps_tok_added_name *hit = bsearch(&key, a->map, a->n_map, sizeof key, map_cmp);
    return hit && hit->special;
}

int32_t ps_tok_added_max_id(const ps_tok_added *a)
{
    return a && a->n ? a->toks[a->n - 1].id : -1;
}

/* ---- splitting -------------------------------------------------------- */

/* The root's children per first byte: a position whose byte starts no
 * pattern is skipped without a walk. */
static size_t trie_walk(const ps_tok_trie *t, const unsigned char *s, size_t n, int32_t *val)
{
    uint32_t cur = t->root_child[s[0]];
    size_t best = 0;
    for (size_t i = 1; cur; i++) {
        const ps_tok_trie_node *node = &t->nodes[cur];
        if (node->id >= 0) {
            best = i;
            *val = node->id;
        }
        if (i == n || !node->n_children)
            break;
        const uint8_t *lab = t->labels + node->first_child;
        uint32_t lo = 0, hi = node->n_children;
        while (lo < hi) { /* labels are sorted */
            uint32_t mid = (lo + hi) / 2;
            if (lab[mid] < s[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        cur = lo < node->n_children && lab[lo] == s[i] ? node->first_child + lo : 0;
    }
    return best;
}

/* Leftmost-longest: the first position at or after `from` where a pattern
 * matches, and its longest pattern. Returns 1 with [*mb, *me) and the
 * token index, or 0. */
static int next_match(const ps_tok_trie *t, const unsigned char *s, size_t n, size_t from,
                      size_t *mb, size_t *me, int32_t *idx)
{
    for (size_t i = from; i < n; i++) {
        if (!t->root_child[s[i]])
            continue;
        size_t len = trie_walk(t, s + i, n - i, idx);
        if (len) {
            *mb = i;
            *me = i + len;
            return 1;
        }
    }
    return 0;
}

/* Rust regex's \w (Unicode): Alphabetic, marks, decimal digits, connector
 * punctuation and Join_Control. Alphabetic is the letters, Nl and
 * Other_Alphabetic, which outside the marks is only the circled and squared
 * Latin letters (So). The newer word characters utf8proc leaves unassigned
 * are ps_uni_hf_word_new (generated: unicode_tables.c). */
static bool is_word_char(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
               (cp >= 'A' && cp <= 'Z') || cp == '_';
    if (cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9) ||
        (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
        (cp >= 0x1F170 && cp <= 0x1F189) ||
        ps_uni_in_ranges(ps_uni_hf_word_new, ps_uni_hf_word_new_n, cp))
        return true;
    switch (utf8proc_get_property((utf8proc_int32_t)cp)->category) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

static uint32_t cp_before(const char *s, size_t end)
{
    size_t b = end - 1;
    while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80)
        b--;
    uint32_t cp = 0xFFFD;
    ps_tok_utf8_decode((const unsigned char *)s + b, end - b, &cp);
    return cp;
}

static uint32_t cp_at(const char *s, size_t n)
{
    uint32_t cp = 0xFFFD;
    ps_tok_utf8_decode((const unsigned char *)s, n, &cp);
    return cp;
}

/* Length of the whitespace run that starts s[0..n) (HF: `^\s*`). */
static size_t space_run_after(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        unsigned l = ps_tok_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (!l || !ps_is_white_space(cp))
            break;
        i += l;
    }
    return i;
}

static int seg_push(ps_tok_segs *o, size_t off, size_t len, int32_t id)
{
    if (o->n == o->cap) {
        size_t c = o->cap ? o->cap * 2 : 16;
        ps_tok_seg *v = realloc(o->v, c * sizeof *v);
        if (!v)
            return PS_ENOMEM;
        o->v = v;
        o->cap = c;
    }
    o->v[o->n++] = (ps_tok_seg){off, len, id};
    return PS_OK;
}

/* HF's find_matches, stretch for stretch (empty stretches are left out, as
 * PreTokenizedString::split drops them). */
int ps_tok_added_split(const ps_tok_added *a, bool normalized, const char *s, size_t n,
                       ps_tok_segs *out)
{
    out->n = 0;
    if (!n)
        return PS_OK;
    const ps_tok_trie *t = a ? &a->trie[normalized] : NULL;
    if (!t || !t->n_nodes)
        return seg_push(out, 0, n, -1);
    const unsigned char *u = (const unsigned char *)s;
    size_t start_offset = 0, from = 0, mb, me;
    int32_t idx;
    while (next_match(t, u, n, from, &mb, &me, &idx)) {
        from = me;
        const ps_tok_added_tok *tok = &a->toks[idx];
        if (tok->f.single_word) {
            bool start_space = mb == 0 || !is_word_char(cp_before(s, mb));
            bool stop_space = me == n || !is_word_char(cp_at(s + me, n - me));
            if (!start_space || !stop_space)
                continue;
        }
        size_t start = mb, stop = me;
        if (tok->f.lstrip) {
            size_t ns = ps_tok_trim_end_len(s, mb); /* HF: `\s*$` */
            start = ns > start_offset ? ns : start_offset;
        }
        if (tok->f.rstrip)
            stop += space_run_after(s + me, n - me);
        int rc;
        if (start_offset < start && (rc = seg_push(out, start_offset, start - start_offset, -1)))
            return rc;
        if ((rc = seg_push(out, start, stop - start, tok->id)))
            return rc;
        start_offset = stop;
    }
    if (start_offset < n)
        return seg_push(out, start_offset, n - start_offset, -1);
    return PS_OK;
}
