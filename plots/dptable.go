package plots

import (
	"math"
	"strconv"

	"github.com/memo-research/memo/internal/provenance"
)

// Columns of a comparison in which some run trained with DP-SGD: its
// privacy record (summary.json's dp: ε at δ, σ, q, C) and the utility the
// privacy costs, the validation loss on held-out text at the end of
// training. A table without a DP-SGD run has none of them, so it is
// byte-identical to one written before they existed.

// dpColumn is one such column: its header, its cell in table.md and
// table.tex, and its table.csv name and value (NaN: empty).
type dpColumn struct {
	head, csv string
	cell      func(row) string
	val       func(row) float64
}

// dpColumns are the columns of rows: none unless a run used DP-SGD.
func dpColumns(rows []row) []dpColumn {
	used := false
	for _, w := range rows {
		used = used || w.DP != nil
	}
	if !used {
		return nil
	}
	rec := func(f func(provenance.DPRecord) float64) func(row) float64 {
		return func(w row) float64 {
			if w.DP == nil {
				return math.NaN()
			}
			return f(*w.DP)
		}
	}
	eps := rec(provenance.DPRecord.Eps)
	return []dpColumn{
		{"DP ε", "dp_epsilon", func(w row) string { return epsCell(w, eps(w)) }, eps},
		{"DP δ", "dp_delta", dpCell(rec(func(r provenance.DPRecord) float64 { return r.Delta }), 'g', -1),
			rec(func(r provenance.DPRecord) float64 { return r.Delta })},
		{"DP σ", "dp_noise_multiplier", dpCell(rec(func(r provenance.DPRecord) float64 { return r.NoiseMultiplier }), 'f', 3),
			rec(func(r provenance.DPRecord) float64 { return r.NoiseMultiplier })},
		{"DP q", "dp_sample_rate", dpCell(rec(func(r provenance.DPRecord) float64 { return r.SampleRate }), 'g', 4),
			rec(func(r provenance.DPRecord) float64 { return r.SampleRate })},
		{"DP C", "dp_max_grad_norm", dpCell(rec(func(r provenance.DPRecord) float64 { return r.MaxGradNorm }), 'g', -1),
			rec(func(r provenance.DPRecord) float64 { return r.MaxGradNorm })},
		{"DP steps", "dp_steps", dpCell(rec(func(r provenance.DPRecord) float64 { return float64(r.Steps) }), 'f', 0),
			rec(func(r provenance.DPRecord) float64 { return float64(r.Steps) })},
		{"final val loss", "final_val_loss", func(w row) string { return num(w.ValLoss, 3) }, func(w row) float64 { return w.ValLoss }},
	}
}

// epsCell is ε for table.md: "–" without DP-SGD, "∞" for σ = 0.
func epsCell(w row, eps float64) string {
	switch {
	case w.DP == nil:
		return "–"
	case math.IsInf(eps, 1):
		return "∞"
	}
	return strconv.FormatFloat(eps, 'f', 2, 64)
}

// dpCell formats val with strconv's format and precision, "–" for NaN.
func dpCell(val func(row) float64, format byte, prec int) func(row) string {
	return func(w row) string {
		v := val(w)
		if math.IsNaN(v) {
			return "–"
		}
		return strconv.FormatFloat(v, format, prec, 64)
	}
}

// dpHeads are cols' headers.
func dpHeads(cols []dpColumn) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.head
	}
	return out
}

// dpCells are w's cells of cols.
func dpCells(cols []dpColumn, w row) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.cell(w)
	}
	return out
}

// finalValLoss is the last validation loss of a run's metrics (NaN: none).
func finalValLoss(r *runData) float64 {
	for i := len(r.Metrics) - 1; i >= 0; i-- {
		if y := r.Metrics[i].ValLoss; !math.IsNaN(y) {
			return y
		}
	}
	return math.NaN()
}
