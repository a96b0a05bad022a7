/* The tokenizer object: options, construction from vocab.txt, the derived
 * tables (tries, ASCII classes, special tokens), accessors, scratch. */
#include "tokenize/hf.h"
#include "tokenize/tokenize.h"
#include "tokenize/unicode_check.h"
#include "common/options.h"
#include "tokenize/unicode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ps_tokenizer_options's size in 0.2.0, its first published version. */
#define TOKOPT_SIZE_0_2 PS_SIZE_THROUGH(ps_tokenizer_options, match_special_tokens)

/* Sizes ps_tokenizer_options has had, oldest first (common/options.h). */
static const size_t TOK_OPTIONS_SIZES[] = {sizeof(ps_tokenizer_options)};
#define N_TOK_OPTIONS_SIZES (sizeof TOK_OPTIONS_SIZES / sizeof TOK_OPTIONS_SIZES[0])

static void tok_defaults(ps_tokenizer_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    opt->lowercase = 1;
    opt->strip_accents = -1;
    opt->handle_chinese_chars = 1;
    opt->clean_text = 1;
    opt->match_special_tokens = 1;
    opt->max_input_chars_per_word = 100;
}

int ps_tokenizer_options_init_size(ps_tokenizer_options *opt, size_t struct_size)
{
    ps_tokenizer_options d;
    tok_defaults(&d);
    return ps_options_init_copy(opt, struct_size, &d, TOK_OPTIONS_SIZES, N_TOK_OPTIONS_SIZES,
                                "ps_tokenizer_options");
}

ps_tokenizer *ps_tok_alloc(void)
{
    ps_tokenizer *tok = calloc(1, sizeof *tok);
    if (tok) {
        ps_tok_vocab_init(&tok->vocab);
        tok->unk_id = tok->cls_id = tok->sep_id = -1;
    }
    return tok;
}

void ps_tokenizer_free(ps_tokenizer *tok)
{
    if (!tok)
        return;
    ps_tok_vocab_free(&tok->vocab);
    ps_tok_trie_free(&tok->word_trie);
    ps_tok_trie_free(&tok->cont_trie);
    for (size_t i = 0; i < tok->n_specials; i++)
        free(tok->specials[i].text);
    free(tok->specials);
    for (size_t i = 0; i < tok->n_warnings; i++)
        free(tok->warnings[i]);
    free(tok->warnings);
    free(tok->unk);
    free(tok->prefix);
    free(tok->cls);
    free(tok->sep);
    ps_tok_hf_free(tok->hf);
    free(tok->model_type);
    free(tok);
}

int ps_tok_add_special(ps_tokenizer *tok, const char *text, size_t len, int32_t id)
{
    if (!len)
        return PS_EINVAL;
    for (size_t i = 0; i < tok->n_specials; i++)
        if (tok->specials[i].len == len && !memcmp(tok->specials[i].text, text, len)) {
            tok->specials[i].id = id; /* a later definition wins */
            return PS_OK;
        }
    ps_tok_special *sp = realloc(tok->specials, (tok->n_specials + 1) * sizeof *sp);
    if (!sp)
        return PS_ENOMEM;
    tok->specials = sp;
    char *copy = malloc(len + 1);
    if (!copy)
        return PS_ENOMEM;
    memcpy(copy, text, len);
    copy[len] = '\0';
    sp[tok->n_specials++] = (ps_tok_special){copy, len, id};
    unsigned char first = (unsigned char)text[0];
    tok->special_first[first] = 1;
    if (first < 0x80)
        tok->ascii_class[first] |= PS_TOK_SPECIAL_START;
    tok->specials_ascii = true;
    for (size_t i = 0; i < tok->n_specials; i++)
        if ((unsigned char)tok->specials[i].text[0] >= 0x80)
            tok->specials_ascii = false;
    return PS_OK;
}

static char *dup_or(const char *s, const char *dflt)
{
    return strdup(s ? s : dflt);
}

static int32_t lookup(const ps_tokenizer *tok, const char *s)
{
    size_t n = strlen(s);
    return ps_tok_vocab_find(&tok->vocab, s, n);
}

static void build_ascii_tables(ps_tokenizer *tok)
{
    for (unsigned c = 0; c < 128; c++) {
        uint8_t cls = PS_TOK_WORD;
        if (tok->clean && (c == 0 || ps_uni_is_control(c)))
            cls = PS_TOK_DROP;
        else if (ps_is_white_space(c))
            cls = PS_TOK_SPACE;
        else if (ps_uni_is_punctuation(c))
            cls = PS_TOK_PUNCT;
        if (tok->special_first[c])
            cls |= PS_TOK_SPECIAL_START;
        tok->ascii_class[c] = cls;
        tok->ascii_map[c] = (uint8_t)(tok->lowercase && c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
}

int ps_tok_finish(ps_tokenizer *tok, const ps_tokenizer_options *opt, ps_error *err)
{
    if (opt->strip_accents < -1 || opt->strip_accents > 1)
        return ps_error_set(err, PS_EINVAL, "strip_accents must be -1, 0 or 1");
    tok->lowercase = opt->lowercase != 0;
    tok->strip_accents = opt->strip_accents < 0 ? tok->lowercase : opt->strip_accents != 0;
    tok->chinese = opt->handle_chinese_chars != 0;
    tok->clean = opt->clean_text != 0;
    tok->match_specials = opt->match_special_tokens != 0;
    tok->max_chars = opt->max_input_chars_per_word ? opt->max_input_chars_per_word : 100;
    tok->unk = dup_or(opt->unk_token, "[UNK]");
    tok->prefix = dup_or(opt->continuing_subword_prefix, "##");
    tok->cls = dup_or(opt->cls_token, "[CLS]");
    tok->sep = dup_or(opt->sep_token, "[SEP]");
    if (!tok->unk || !tok->prefix || !tok->cls || !tok->sep)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    tok->prefix_len = strlen(tok->prefix);
    tok->unk_id = lookup(tok, tok->unk);
    if (tok->cls_id < 0)
        tok->cls_id = lookup(tok, tok->cls);
    if (tok->sep_id < 0)
        tok->sep_id = lookup(tok, tok->sep);
    build_ascii_tables(tok);
    int rc = ps_tok_trie_build(&tok->word_trie, &tok->vocab, "", 0);
    if (!rc)
        rc = ps_tok_trie_build(&tok->cont_trie, &tok->vocab, tok->prefix, tok->prefix_len);
    if (rc)
        return ps_error_set(err, rc, "out of memory building the vocabulary trie");
    return PS_OK;
}

/* The special tokens BertTokenizerFast registers. One the vocab lacks is
 * added as HuggingFace's AddedVocabulary adds it: the next id from the
 * number of distinct tokens on (so "[PAD]" in text is one id, not "[",
 * "pad", "]"). A missing unk/[CLS]/[SEP] still fails at encode, as in HF. */
static int add_bert_specials(ps_tokenizer *tok, const char *name)
{
    const char *names[] = {"[PAD]", tok->unk, tok->cls, tok->sep, "[MASK]"};
    int32_t next = (int32_t)tok->vocab.n_keys;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int32_t id = lookup(tok, names[i]);
        int added = id < 0 && tok->match_specials;
        char what[80] = "";
        if (added && (i == 0 || i == 4))
            snprintf(what, sizeof what, ": added as id %d, as HuggingFace adds it", (int)next);
        else if (added)
            snprintf(what, sizeof what, ": encoding will fail");
        if (id < 0 && ps_tok_warn(tok, "%s: no %s token%s", name, names[i], what))
            return PS_ENOMEM;
        if (added)
            id = next++;
        if (id >= 0) {
            int rc = ps_tok_add_special(tok, names[i], strlen(names[i]), id);
            if (rc)
                return rc;
        }
    }
    return PS_OK;
}

int ps_tokenizer_load_vocab_buffer(const char *data, size_t len, const char *name,
                                   const ps_tokenizer_options *opt, ps_tokenizer **out,
                                   ps_error *err)
{
    return ps_tok_load_vocab_host(data, len, name, opt, false, out, err);
}

int ps_tok_load_vocab_host(const char *data, size_t len, const char *name,
                           const ps_tokenizer_options *opt, bool any_host, ps_tokenizer **out,
                           ps_error *err)
{
    ps_tokenizer_options own; /* the caller's options at this library's size */
    if (!out || (!data && len))
        return ps_error_set(err, PS_EINVAL, "ps_tokenizer_load_vocab_buffer: bad arguments");
    *out = NULL;
    tok_defaults(&own);
    int rc = ps_options_adopt(&own, sizeof own, opt, TOK_OPTIONS_SIZES, N_TOK_OPTIONS_SIZES,
                              "ps_tokenizer_options", err);
    if (rc)
        return rc;
    opt = &own;
    if (!name)
        name = "<vocab>";
    ps_tokenizer *tok = ps_tok_alloc();
    if (!tok)
        return ps_error_set(err, PS_ENOMEM, "out of memory");
    rc = ps_tok_vocab_parse_txt(&tok->vocab, data ? data : "", len, name, err);
    if (!rc)
        rc = ps_tok_finish(tok, opt, err);
    if (!rc && ((rc = add_bert_specials(tok, name)) || (rc = ps_tok_vocab_check(tok, data, len, name))))
        ps_error_set(err, rc, "out of memory");
    if (!rc)
        rc = ps_tok_unicode_check(tok, name, 0, any_host, err);
    if (rc) {
        ps_tokenizer_free(tok);
        return rc;
    }
    *out = tok;
    return PS_OK;
}

int ps_tokenizer_load_vocab(const char *path, const ps_tokenizer_options *opt,
                            ps_tokenizer **out, ps_error *err)
{
    if (!path || !out)
        return ps_error_set(err, PS_EINVAL, "ps_tokenizer_load_vocab: bad arguments");
    *out = NULL;
    char *data;
    size_t len;
    int rc = ps_file_read_all(path, "vocabulary", PS_TOK_FILE_MAX, &data, &len, err);
    if (rc)
        return rc;
    rc = ps_tokenizer_load_vocab_buffer(data, len, path, opt, out, err);
    free(data);
    return rc;
}

static void options_fill(const ps_tokenizer *tok, ps_tokenizer_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    if (tok->hf) { /* BERT's options do not apply; only the unk token */
        opt->unk_token = ps_tokenizer_id_to_token(tok, tok->hf->specials.unk);
        return;
    }
    opt->lowercase = tok->lowercase;
    opt->strip_accents = tok->strip_accents;
    opt->handle_chinese_chars = tok->chinese;
    opt->clean_text = tok->clean;
    opt->match_special_tokens = tok->match_specials;
    opt->unk_token = tok->unk;
    opt->continuing_subword_prefix = tok->prefix;
    opt->cls_token = tok->cls;
    opt->sep_token = tok->sep;
    opt->max_input_chars_per_word = tok->max_chars;
}

int ps_tokenizer_get_options_size(const ps_tokenizer *tok, ps_tokenizer_options *opt,
                                  size_t size)
{
    ps_tokenizer_options o;
    options_fill(tok, &o);
    int rc = ps_struct_out(opt, size, &o, sizeof o, TOKOPT_SIZE_0_2, "ps_tokenizer_options",
                           NULL);
    if (rc == 0) /* the caller's size: the struct can go back to a loader */
        memcpy(opt, &size, sizeof size);
    return rc;
}

/* The 0.2.0 entry point (pairshard/common.h, "Structs the library fills"). */
#undef ps_tokenizer_get_options
PS_API void ps_tokenizer_get_options(const ps_tokenizer *tok, ps_tokenizer_options *opt);

void ps_tokenizer_get_options(const ps_tokenizer *tok, ps_tokenizer_options *opt)
{
    ps_tokenizer_get_options_size(tok, opt, TOKOPT_SIZE_0_2);
}

size_t ps_tokenizer_vocab_size(const ps_tokenizer *tok)
{
    /* every id an encode can return is below this: added tokens and the
     * post-processor's ids of a tokenizer.json may lie past the model's */
    if (tok->hf)
        return tok->hf->vocab_size;
    size_t n = tok->vocab.n_ids;
    for (size_t i = 0; i < tok->n_specials; i++)
        if ((size_t)tok->specials[i].id + 1 > n)
            n = (size_t)tok->specials[i].id + 1;
    if (tok->cls_id >= 0 && (size_t)tok->cls_id + 1 > n)
        n = (size_t)tok->cls_id + 1;
    if (tok->sep_id >= 0 && (size_t)tok->sep_id + 1 > n)
        n = (size_t)tok->sep_id + 1;
    return n;
}

int32_t ps_tokenizer_token_to_id(const ps_tokenizer *tok, const char *token, size_t len)
{
    if (!token)
        return PS_EINVAL;
    if (tok->hf) { /* added tokens first, then the model, as HF */
        int32_t a = ps_tok_added_find(tok->hf->added, token, len);
        if (a < 0)
            a = ps_tok_vocab_find(&tok->hf->model->vocab, token, len);
        return a >= 0 ? a : PS_ENOENT;
    }
    int32_t id = ps_tok_vocab_find(&tok->vocab, token, len);
    for (size_t i = 0; id < 0 && i < tok->n_specials; i++) /* added, as in HF */
        if (tok->specials[i].len == len && !memcmp(tok->specials[i].text, token, len))
            id = tok->specials[i].id;
    return id >= 0 ? id : PS_ENOENT;
}

const char *ps_tokenizer_id_to_token(const ps_tokenizer *tok, int32_t id)
{
    if (tok->hf) {
        const char *t = ps_tok_added_token(tok->hf->added, id, NULL);
        const ps_tok_vocab *v = &tok->hf->model->vocab;
        if (t || id < 0 || (size_t)id >= v->n_ids || v->tok_off[id] == SIZE_MAX)
            return t;
        return v->pool + v->tok_off[id];
    }
    if (id < 0 || (size_t)id >= tok->vocab.n_ids || tok->vocab.tok_off[id] == SIZE_MAX)
        return NULL;
    return tok->vocab.pool + tok->vocab.tok_off[id];
}

ps_tok_scratch *ps_tok_scratch_new(void) { return calloc(1, sizeof(ps_tok_scratch)); }

void ps_tok_scratch_free(ps_tok_scratch *s)
{
    if (!s)
        return;
    free(s->ids);
    free(s->types);
    free(s->word);
    free(s->pend);
    ps_tok_hfwork_free(s->hw);
    free(s);
}

int ps_tok_scratch_reserve(ps_tok_scratch *s, size_t extra)
{
    size_t need;
    if (!ps_size_add(s->n, extra, &need))
        return PS_ENOMEM;
    if (need <= s->cap)
        return PS_OK;
    size_t cap = s->cap ? s->cap : 256;
    while (cap < need)
        cap *= 2;
    if (ps_array_resize(&s->ids, cap, sizeof *s->ids) ||
        ps_array_resize(&s->types, cap, sizeof *s->types))
        return PS_ENOMEM;
    s->cap = cap;
    return PS_OK;
}
