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
//     scores 0, as rouge_score does. The texts are those extract decoded
//     without special tokens, so an emitted EOS is not a word;
//   - loss (mean token NLL over the document's window: its first tokens
//     up to the attack window, one trained row at most the model context,
//     see extract.AttackWindow), zlib_ratio (loss divided by the
//     length in bytes of the zlib-compressed text of that same window, so
//     numerator and denominator cover one span), mink (the mean NLL of the
//     K % least likely tokens, Min-K% Prob, Shi et al. 2023) and ref_diff
//     (loss minus a reference model's loss).
//
// Membership inference treats targets as members and controls as
// non-members. Each membership statistic is one descriptor (MIAStatistic)
// in a registry, registered from its own file, stat_<name>.go: its name
// (scores.parquet column and summary.json mia.<name>), label, direction,
// what it needs from the model pass, and how to compute it, per document
// (PerDoc, from the completion) or from mia_signals.parquet for all
// documents at once (Signals, the calibrated attacks). A new statistic is
// that one file and its test; scores.parquet, summary.json, memo eval and
// the figures read the registry (eval/registrytest shows it). A statistic
// whose lower values mean member is scored on its negation (MemberScore):
// AUC = P(member scores higher than control) + ½·P(tie), the Mann-Whitney
// statistic.
//
// Rates per split come with percentile-bootstrap 95 % confidence intervals
// from a seeded generator, so the same inputs give the same summary.json.
// These functions (Mean, BootstrapCI, WilsonCI, AUC, TPRAtFPR, ROC,
// MIABootstrap) are the only place memo computes these numbers: report
// tables and figures read summary.json or call them.
//
// summary.json's goldfish table and model identity come from the
// completions' metadata, where extract recorded the attacked checkpoint's
// own settings (source "checkpoint"); only files that record none fall
// back to the settings eval is given (source "given").
//
// # Conventions
//
// Where the literature leaves a choice open, or our numbers can differ
// from a Python pipeline's, this is what eval does:
//
//   - TPR at a false positive rate counts only FPR strictly below the
//     limit, as mimir and LiRA do (tpr[fpr < limit]): it is the highest
//     true positive rate of any threshold (flagging scores >= t) whose
//     false positive rate is < the limit. With 100 controls, TPR at 1 % FPR
//     allows no control above the threshold; with 1,000 controls or
//     fewer, TPR at 0.1 % FPR allows none either. Tied scores share a
//     threshold and are never split to get under the limit. With no
//     threshold under the limit the TPR is 0. summary.json gives it at
//     Config.FPR (mia.*_tpr) and at 0.1 % and 1 % (LowFPRs, mia.loss etc.).
//   - MIA intervals are a stratified percentile bootstrap (MIABootstrap):
//     members and controls are resampled separately, each to its own
//     size, eval.bootstrap times, and the 2.5 and 97.5 percentiles of the
//     resampled AUCs and TPRs are the 95 % interval.
//   - Min-K% Prob rounds k down, as Shi et al.'s code does: over n token
//     losses it averages the int(n·K) largest (the least likely tokens),
//     the product taken in float64 and truncated (MinKCount), so 20 % of
//     7 tokens is 1 token and 70 % of 90 tokens is 62 (0.7·90 is just
//     below 63 in binary). Where that is 0 (n < 1/K) memo averages one
//     token; the published code averages none (NaN). Min-K%++ takes the
//     same k.
//   - zlib lengths come from the C zlib library at the default level (6)
//     (internal/czlib), the compress2 that Python's zlib.compress calls,
//     so they equal Python's byte for byte; Go's compress/zlib, another
//     deflater, would give lengths a few bytes apart.
//   - The zlib ratio's text is the window the loss covers (the document's
//     first attack-window tokens, decoded), not the whole document.
package eval
