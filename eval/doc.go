// Package eval scores the completions of an extraction attack: how much of
// each document a model gives back, and how well its losses tell training
// members from controls.
//
// Per document (one row of scores.parquet):
//
//   - exact_match: the generated token ids equal the true suffix ids;
//   - token_accuracy: the fraction of suffix positions whose generated id
//     equals the true one (Pythia's memorization score; a generation
//     shorter than the suffix misses the positions it lacks);
//   - first_divergence: the first suffix position that differs, the
//     suffix length when none does;
//   - rougeL, rouge1, rouge2: F1 scores on the decoded texts with the
//     rouge_score conventions (lowercase, every character outside [a-z0-9]
//     becomes a space, split on whitespace, no stemming); an empty side
//     scores 0, as rouge_score does;
//   - loss (mean token NLL over the document's window: its first context
//     tokens, all the model sees at once), zlib_ratio (loss divided by the
//     length in bytes of the zlib-compressed text of that same window, so
//     numerator and denominator cover one span), mink (the mean NLL of the
//     K % least likely tokens, Min-K% Prob, Shi et al. 2023) and ref_diff
//     (loss minus a reference model's loss).
//
// Membership inference treats targets as members and controls as
// non-members. Every MIA statistic is "lower means member", so the AUC is
// computed on its negation: AUC = P(member scores higher than control) +
// ½·P(tie), the Mann-Whitney statistic. TPR at 1 % FPR is the highest true
// positive rate of any threshold whose false positive rate is at most 1 %.
//
// Rates per split come with percentile-bootstrap 95 % confidence intervals
// from a seeded generator, so the same inputs give the same summary.json.
package eval
