// Package data turns text into the datasets memo trains on and attacks:
// sources of documents, tokenizers, Arrow IPC tables in the run directory,
// and the member / non-member splits with their repetition counts.
//
// Build reads the sources of a Config, trains or loads the tokenizer, cuts
// documents into chunks of at most chunk_tokens tokens (paragraphs, then
// sentences, then words only to reach min_tokens), rejects what cannot be
// used — unreadable files, invalid UTF-8, empty or too-short documents,
// text that would not round-trip, passages duplicated across documents —
// and reports each rejection by name in report.json. It then draws, from
// one seeded permutation, the targets (trained on repetitions times), the
// controls (never trained on, and sharing no 50-token window with any
// target), the validation documents and the background filler (sharing no
// 50-token window with any target or control: background is trained on, so
// such a document would leak a control's text into training or repeat a
// target's beyond its count; each one is rejected and reported), and writes
// docs.arrow, tokens.arrow, tokenizer.json and report.json, each to a
// temporary name renamed into place. Open reads them back; TrainRows lays
// the training stream out as rows of block+1 ids.
//
// # Tokenizers
//
// "bpe:N" — the default, bpe:4096 — is a byte-level BPE learned on the
// run's own corpus. On a CPU the language-model head costs vocab × width
// multiply-adds per token: with GPT-2's 50,257 tokens and width 128 that
// is 6.4 M, against about 0.4 M for two transformer blocks, so a compact
// vocabulary is what makes small CPU runs affordable. A vocabulary learned
// on the corpus is preferred to GPT-2 ids remapped to those that occur
// because it stays small for any corpus size (a remapped GPT-2 vocabulary
// grows with the text: tens of thousands of ids for a few MB), it still
// encodes unseen text (all 256 bytes are tokens, unlike a remap, which has
// no id for a GPT-2 token missing from the corpus), and its tokens per
// byte stay close to GPT-2's on the text it was trained on.
//
// Training is ours (trainBPE), not sugarme/tokenizer's BPE trainer: that
// trainer (v0.3.0) pops pairs of equal count from its merge queue in Go map
// order, so two runs on the same text learn different vocabularies (tens
// of 600 ids differ between runs on 100 KB of Opticks), and it prints its
// progress to stdout even with ShowProgress(false); both are shown by
// TestSugarmeTrainerNondeterministic. Ours breaks ties by token ids and is
// cached in CacheDir by a hash of the corpus.
//
// Every tokenizer runs on one engine, data/hftok, which encodes and
// decodes a tokenizer.json as Hugging Face's tokenizers library does (its
// goldens are the library's output) and refuses by name what it does not
// implement. memo's own byte-level BPEs (trained ones and "gpt2") are
// written as plain tokenizer.json files in the layout of Hugging Face's
// GPT-2 file (hftok.WriteByteLevelBPE), so the library loads what memo
// saves and exports and gives the same ids (TestHFLibraryAgrees, with the
// library's Node binding when it is installed). Files memo wrote before
// carry a "memo_native" key the library refuses; it is dropped on
// reading, and their ids are the ones the native encoder memo had then
// gave (TestLegacyTokenizerFile). sugarme is not used for GPT-2: its
// ByteLevel pre-tokenizer drops GPT-2's whitespace rules (\s+(?!\S)|\s+),
// so a whitespace run ending in a newline before a word stays one piece:
// every paragraph break "\n\n" before text becomes id 628 where GPT-2 has
// 198 198 (TestSugarmeGPT2Whitespace; hftok matches ids from the reference
// JavaScript port, TestGPT2Golden). sugarme still reads the files memo
// writes and gives the same ids on single-spaced text (TestSaveLoad,
// TestGPT2MatchesSugarme).
//
// Decoding reproduces the text byte for byte: every tokenizer we write has
// add_prefix_space off (ByteLevel's default of on would put a space in
// front of every decoded text), all 256 byte tokens are in the trainer's
// initial alphabet (without them, text with an unseen byte cannot be
// encoded), and Build rejects any document that does not round-trip.
// The tokenizer is trained on all documents, controls included; that
// reaches the model only through which merges exist.
package data
