package runfiles

// MIASignal is one row of mia_signals.parquet: one model's signal on one
// document of the candidate pool or of the population. The calibrated
// membership attacks (package eval/calibrated) take their inputs from this
// file alone, so anyone can recompute scores.parquet's lira_online,
// lira_offline, rmia and counterfactual_mem from it.
//
// Model is "target" or "ref-NN"; RefIndex is -1 for the target and NN for
// reference NN. TrainedOn says whether that model trained on the document
// (for the target: the document is a member). LLSum and LLMean are the summed
// and mean natural-log likelihood of the document's scored window (its
// first AttackWindow tokens, the window of completions.arrow's losses)
// under that model; NTokens is how many tokens were predicted (window − 1).
type MIASignal struct {
	Model    string `arrow:"model,required"`
	RefIndex int    `arrow:"ref_index,required"`
	DocID    int64  `arrow:"doc_id,required"`
	Split    string `arrow:"split,required"`
	// The column was "in", an SQL keyword, in files of before 2026-11-30.
	TrainedOn bool    `arrow:"trained_on,required,was=in"`
	NTokens   int     `arrow:"n_tokens,required"`
	LLSum     float64 `arrow:"ll_sum,required"`
	LLMean    float64 `arrow:"ll_mean,required"`
}

// MIASignals is mia_signals.parquet's codec.
var MIASignals = NewTable[MIASignal](MIASignalsFile)

// TargetModel is MIASignal.Model of the attacked model's rows.
const TargetModel = "target"
