/*
 * pairshard — preprocessing pipeline and shard store for text-to-SQL pairs.
 *
 * Umbrella header: include this one. Each stage has its own header:
 *   pairshard/common.h     version, error codes, ps_error, ps_strerror
 *   pairshard/clean.h      ingest + cleaning (stage 1)
 *   pairshard/tokenizer.h  BERT WordPiece tokenizer (stage 2)
 *   pairshard/reader.h     streaming shards into training batches (stage 5)
 */
#ifndef PAIRSHARD_H
#define PAIRSHARD_H

#include "pairshard/common.h"
#include "pairshard/clean.h"
#include "pairshard/tokenizer.h"
#include "pairshard/reader.h"

#endif /* PAIRSHARD_H */
