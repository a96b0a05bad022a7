/*
 * Placeholder for the Unigram model's loader until tokenize/unigram.c
 * (another branch) is merged: a weak definition, so the real one replaces
 * it. TEMPORARY: delete when unigram.c lands (named zz_ like zz_pending.c,
 * so the archive lists it after a real definition).
 */
#include "tokenize/hf.h"

__attribute__((weak)) int ps_tok_unigram_load(const ps_tok_load *c, json_t *j, const char *jpath,
                                              ps_tok_model **out)
{
    *out = NULL;
    if (!json_is_array(json_object_get(j, "vocab"))) /* not Unigram: lets untagged go on */
        return ps_tok_load_fail(c, PS_EFORMAT, jpath, "a Unigram vocab is an array");
    return ps_tok_load_fail(c, PS_EUSAGE, jpath, "Unigram models are not supported in this build");
}
