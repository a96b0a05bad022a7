/*
 * pairshard — preprocessing pipeline and shard store for text-to-SQL pairs.
 *
 * Umbrella header: include this one. Each stage has its own header:
 *   pairshard/common.h     version, error codes, ps_error, ps_strerror
 *   pairshard/clean.h      ingest + cleaning (stage 1)
 *   pairshard/tokenizer.h  BERT WordPiece tokenizer (stage 2)
 *   pairshard/reader.h     streaming shards into training batches (stage 5)
 *
 * pairshard/common.h states what every header follows: the error model
 * (0 or a negative PS_E* code, a message in an optional ps_error), the
 * argument order (inputs, out-parameters, ps_error last), getter names
 * (ps_<noun>_get_<what>), ownership of returned pointers, and options
 * structs that grow (a leading struct_size set by ps_*_options_init).
 *
 * Link with `pkg-config --cflags --libs pairshard`.
 */
#ifndef PAIRSHARD_H
#define PAIRSHARD_H

#include "pairshard/common.h"
#include "pairshard/schema.h"
#include "pairshard/clean.h"
#include "pairshard/tokenizer.h"
#include "pairshard/reader.h"
#include "pairshard/preprocess.h"

#endif /* PAIRSHARD_H */
