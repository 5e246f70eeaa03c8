// Package extract attacks a trained model with prefix completion: each
// document's prefix is fed to the model, a continuation as long as the true
// suffix is decoded, and both are written to completions.arrow with the
// document's per-token losses for membership inference. The file's schema
// metadata names the checkpoint attacked, its model and the goldfish
// settings it was trained with (see internal/provenance), so that the file can be
// scored anywhere.
//
// Prompt modes (Config.Mode):
//
//   - reference: the document truncated to the attack window; its last
//     Suffix tokens are the suffix and everything before them the prefix,
//     as the goldfish repository's evaluation does (it truncates to the
//     context it trained with);
//   - fixed: the first Prefix tokens, then the next Suffix tokens (Carlini
//     et al. 2022 use 50 + 50);
//   - pythia: 32 + 32 tokens from the start of each document (Pythia's
//     memorization score; Prefix and Suffix are ignored). Note the
//     difference from Biderman et al. 2023, who take 32 + 32 from the start
//     of every training sequence: here a document packed into several
//     training rows is attacked once, at its start, and rows that begin
//     inside a document (or hold the tail of one and the head of the next)
//     are not attacked. With the padded layout and documents no longer than
//     a row the two coincide; otherwise the rate is over documents, not
//     rows.
//
// The attack window (AttackWindow) is one training row, train.block + 1
// tokens as the checkpoint's state.json records it, capped at the model
// context: a model trained on 128-token rows never saw position 200, and a
// document longer than a row continues in a new row with a fresh context,
// so prompts and membership losses stay inside the first row. A prompt
// that does not fit the window is a configuration error.
//
// A document too short for its prompt is written with status "too_short"
// and no generation, and named in the log: never dropped silently.
//
// Decoding (Config.Decoding) is greedy by default; "sample" draws with
// temperature, then top-k, then top-p on the distribution renormalized
// after top-k (Hugging Face's order and semantics), from a generator
// seeded by (seed, doc_id), so a document's sample does not depend on its
// batch; "beam" keeps the Beams most likely continuations and returns the
// best. Prompts are batched left-padded through the model's KV cache;
// the membership losses are taken over right-padded batches of windows.
package extract
