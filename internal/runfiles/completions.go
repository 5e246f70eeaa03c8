package runfiles

import "github.com/apache/arrow/go/v17/arrow"

// CompletionsSchema is the schema of completions.arrow, extract's output:
// one row per document attacked. loss, mink and token_losses are over the
// document's first context tokens, its window (mink with
// extract.Config.MinKFraction); window_text is the decoded window, the
// text whose zlib length divides the loss in eval's zlib ratio (text is
// the whole document). ref_loss is NaN without a reference model. Rows
// with status other than "ok" have empty prefix, suffix and generation.
// mink_pp (Min-K%++), recall (ReCaLL) and grad_norm (model.GradNorm) are
// membership statistics over the window; p_extract is the natural log of
// the probability that the attack's decoding reproduces the suffix
// (extract's decoder.suffixLogProb). Each is NaN where undefined or turned
// off. The schema's metadata names the model and the attack (see the keys
// of internal/provenance). eval reads it by column name, so files written
// before a column existed still read.
var CompletionsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "doc_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "split", Type: arrow.BinaryTypes.String},
	{Name: "title", Type: arrow.BinaryTypes.String},
	{Name: "status", Type: arrow.BinaryTypes.String},
	{Name: "repetitions", Type: arrow.PrimitiveTypes.Int32},
	{Name: "prefix_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "suffix_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "generated_ids", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)},
	{Name: "prefix_text", Type: arrow.BinaryTypes.String},
	{Name: "suffix_text", Type: arrow.BinaryTypes.String},
	{Name: "generated_text", Type: arrow.BinaryTypes.String},
	{Name: "text", Type: arrow.BinaryTypes.String},
	{Name: "n_tokens", Type: arrow.PrimitiveTypes.Int32},
	{Name: "loss", Type: arrow.PrimitiveTypes.Float64},
	{Name: "mink", Type: arrow.PrimitiveTypes.Float64},
	{Name: "ref_loss", Type: arrow.PrimitiveTypes.Float64},
	{Name: "token_losses", Type: arrow.ListOf(arrow.PrimitiveTypes.Float32)},
	{Name: "window_text", Type: arrow.BinaryTypes.String},
	{Name: "mink_pp", Type: arrow.PrimitiveTypes.Float64},
	{Name: "p_extract", Type: arrow.PrimitiveTypes.Float64},
	{Name: "recall", Type: arrow.PrimitiveTypes.Float64},
	{Name: "grad_norm", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// CompletionsApproxFields are the columns completions.arrow gains after
// CompletionsSchema's when
// the attack decoded under an approximation (extract.kv_bits,
// extract.attention or extract.speculative not at their defaults) or
// named one in extract.approximation (even "exact"); other attacks write
// CompletionsSchema alone, as before these keys existed.
//
//   - exact_agree: generated tokens equal to exact decoding's (same
//     decoding, same seed) before the first that differs; the suffix
//     length when all agree;
//   - attn_mass_kept: the mean over decode steps, layers, heads of the
//     exact attention probability on the tokens attended (1 unless sparse);
//   - kv_bytes_per_token: mean key and value bytes read per decode step,
//     all layers (model.ApproxStats; NaN for quantspec, whose two models
//     read differently sized caches);
//   - spec_accept: QuantSpec's accepted / proposed draft tokens (NaN
//     without speculation).
//
// Rows not attacked hold 0, NaN, NaN, NaN.
var CompletionsApproxFields = []arrow.Field{
	{Name: "exact_agree", Type: arrow.PrimitiveTypes.Int32},
	{Name: "attn_mass_kept", Type: arrow.PrimitiveTypes.Float64},
	{Name: "kv_bytes_per_token", Type: arrow.PrimitiveTypes.Float64},
	{Name: "spec_accept", Type: arrow.PrimitiveTypes.Float64},
}
