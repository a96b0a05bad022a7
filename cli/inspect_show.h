/* pairshard inspect --show: records of a shard set decoded back to text. */
#ifndef PS_CLI_INSPECT_SHOW_H
#define PS_CLI_INSPECT_SHOW_H

#include "pairshard/tokenizer.h"
#include "store/inspect.h"

#include <stddef.h>

/* Prints the first n records of the set in DIR as JSON lines: id, bucket,
 * length, type_boundary, label, input_ids, and with `tok` the text
 * ps_tokenizer_decode gives (special tokens kept). 0 or a negative code. */
int ps_inspect_show(const char *dir, const ps_manifest *m, size_t n, ps_tokenizer *tok,
                    ps_error *err);

/* Loads the tokenizer file (vocab.txt, or tokenizer.json when json_path is
 * set) after checking its SHA-256 against the manifest's: PS_EUSAGE when it
 * is another file. A vocab.txt loads with the default (uncased) options;
 * decoding does not depend on them. */
int ps_inspect_load_tokenizer(const ps_manifest *m, const char *vocab, const char *json_path,
                              ps_tokenizer **out, ps_error *err);

#endif
