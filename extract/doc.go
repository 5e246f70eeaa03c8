// Package extract attacks a trained model with prefix completion: each
// document's prefix is fed to the model, a continuation as long as the true
// suffix is decoded, and both are written to completions.arrow with the
// document's per-token losses for membership inference.
//
// Prompt modes (Config.Mode):
//
//   - reference: the document truncated to the model's context; its last
//     Suffix tokens are the suffix and everything before them the prefix,
//     as the goldfish repository's evaluation does;
//   - fixed: the first Prefix tokens, then the next Suffix tokens (Carlini
//     et al. 2022 use 50 + 50);
//   - pythia: 32 + 32 tokens from the start of the document, which is the
//     start of its first training row (Pythia's memorization score; Prefix
//     and Suffix are ignored).
//
// A document too short for its prompt is written with status "too_short"
// and no generation, and named in the log: never dropped silently.
//
// Decoding (Config.Decoding) is greedy by default; "sample" draws with
// temperature, top-k and top-p from a generator seeded by (seed, doc_id),
// so a document's sample does not depend on its batch; "beam" keeps the
// Beams most likely continuations and returns the best. Prompts are batched
// left-padded through the model's KV cache.
package extract
