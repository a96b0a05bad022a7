// The BERT tokenizer the benchmarks' HF peers build, as transformers'
// BertTokenizerFast builds it from vocab.txt (uncased): WordPiece, the BERT
// normalizer and pre-tokenizer, [CLS] A [SEP] (B:1 [SEP]:1) and the five
// special tokens. `hf` is the tokenizers binding the caller loaded.
'use strict';

async function bertTokenizer(hf, vocab) {
  const model = await hf.WordPiece.fromFile(vocab, {
    unkToken: '[UNK]', continuingSubwordPrefix: '##', maxInputCharsPerWord: 100,
  });
  const tok = new hf.Tokenizer(model);
  tok.setNormalizer(hf.bertNormalizer({ cleanText: true, handleChineseChars: true, lowercase: true }));
  tok.setPreTokenizer(hf.bertPreTokenizer());
  tok.setPostProcessor(hf.templateProcessing('[CLS] $A [SEP]', '[CLS] $A [SEP] $B:1 [SEP]:1',
    [['[CLS]', tok.tokenToId('[CLS]')], ['[SEP]', tok.tokenToId('[SEP]')]]));
  tok.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
  return tok;
}

module.exports = { bertTokenizer };
