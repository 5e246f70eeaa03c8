package extract

import (
	"context"
	"fmt"
	"runtime"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
)

// Span is one window of a text scored in windows (StrideWindows): the
// tokens [Start, End) go through the model, and of the window's losses
// (one per token after its first) those from index Keep on are the
// text's, the tokens the earlier windows did not score.
type Span struct{ Start, End, Keep int }

// StrideWindows cuts a text of n tokens into the windows of Hugging Face
// transformers' perplexity guide: windows of at most context tokens that
// begin every stride tokens, each scoring only the tokens after the
// previous window's end, so every token but the first is scored once,
// with at least context − stride tokens before it (all before it in the
// first window). A text that fits the context is one window. stride
// must be in [1, context−1]: a window that scored all its tokens would
// leave its first unscored.
func StrideWindows(n, context, stride int) []Span {
	if n < 2 {
		return nil
	}
	var out []Span
	prevEnd := 0
	for begin := 0; ; begin += stride {
		end := min(begin+context, n)
		out = append(out, Span{Start: begin, End: end, Keep: max(0, prevEnd-begin-1)})
		prevEnd = end
		if end == n {
			return out
		}
	}
}

// AuditConfig is memo audit's model pass.
type AuditConfig struct {
	Device, Precision string
	BatchSize         int     // windows per forward pass; 0 sizes it from memory (AutoBatch)
	Window            int     // the longest window; 0 is the model's context
	Stride            int     // StrideWindows' stride; 0 is half the window
	MinKFraction      float64 // Min-K%++'s k
}

// AuditModel is a model opened for an audit.
type AuditModel struct {
	g          *model.GPT
	Checkpoint string // the checkpoint or Hugging Face directory loaded
	Context    int    // the model's context, the longest window
	Vocab      int
	Device     string // where it runs: cpu, cuda:0, ...
}

// OpenAuditModel loads the model of path (a run, checkpoints/, a
// checkpoint or a Hugging Face directory, as extract takes them). The
// caller must Close it, on the thread that opened it (libtorch).
func OpenAuditModel(path string, cfg AuditConfig) (*AuditModel, error) {
	g, ckpt, err := loadModel(path, cfg.Device, cfg.Precision)
	if err != nil {
		return nil, err
	}
	mc := g.Config()
	return &AuditModel{g: g, Checkpoint: ckpt, Context: mc.Context, Vocab: mc.Vocab, Device: torchx.DeviceName(g.Device())}, nil
}

// Close releases the model.
func (m *AuditModel) Close() { m.g.Release() }

// CheckTokens refuses, as bad input, a tokenizer whose ids the model
// cannot take (an id at or past its vocabulary: another model's
// tokenizer) or a text too short to score.
func (m *AuditModel) CheckTokens(tokenizerVocab int, texts []AuditInput) error {
	if tokenizerVocab > m.Vocab {
		return badinput.Errorf("the tokenizer has %d ids, the model %s %d: a tokenizer of another model", tokenizerVocab, m.Checkpoint, m.Vocab)
	}
	for _, t := range texts {
		for _, ids := range [][]int32{t.Tokens, t.LowerTokens} {
			for _, id := range ids {
				if id < 0 || int(id) >= m.Vocab {
					return badinput.Errorf("%s: token %d is outside the vocabulary of %d of %s: a tokenizer of another model", t.Where, id, m.Vocab, m.Checkpoint)
				}
			}
		}
		if len(t.Tokens) < 2 {
			return badinput.Errorf("%s: %d token: a text needs two to score one", t.Where, len(t.Tokens))
		}
	}
	return nil
}

// Windows is cfg's window and stride with their defaults filled in;
// bad input when the window exceeds the model's context or the stride
// is not below the window.
func (m *AuditModel) Windows(cfg AuditConfig) (window, stride int, err error) {
	window, stride = cfg.Window, cfg.Stride
	if window == 0 {
		window = m.Context
	}
	if window < 2 || window > m.Context {
		return 0, 0, badinput.Errorf("--window %d: must be in [2, %d], the model's context", window, m.Context)
	}
	if stride == 0 {
		stride = window / 2
	}
	if stride < 1 || stride >= window {
		return 0, 0, badinput.Errorf("--stride %d: must be in [1, %d], below the window of %d tokens", stride, window-1, window)
	}
	return window, stride, nil
}

// AuditInput is one text to score: its tokens and, for the lowercase
// ratio, its lowercased text's (nil to skip that pass).
type AuditInput struct {
	Where       string // for messages
	Tokens      []int32
	LowerTokens []int32
}

// AuditScored is what the model pass measured of one text.
type AuditScored struct {
	Losses, LowerLosses []float32 // of every token but the first, once each
	MinKPP              float64
	NWindows            int
}

// windowJob is one window of one text's tokens (lower: of its lowercased
// tokens) and its span.
type windowJob struct {
	text  int
	lower bool
	span  Span
	ids   []int32
}

// BatchSize is the windows a forward pass of Score takes: cfg.BatchSize,
// or where that is 0 what fits the device's free memory now (AutoBatch),
// which the same command may find otherwise on another day; scores of
// another batch differ in the last bits (about 1e-7), so an audit
// records the size it resolved.
func (m *AuditModel) BatchSize(cfg AuditConfig) int {
	if cfg.BatchSize > 0 {
		return cfg.BatchSize
	}
	window := cfg.Window
	if window == 0 {
		window = m.Context
	}
	avail, maxBatch := batchMemory(m.g.Device())
	return AutoBatch(m.g.Config(), m.g.WeightBytes(), window, avail, maxBatch)
}

// Score runs every text through the model in stride windows, batched by
// length, and stitches each text's token losses (and, for Min-K%++, the
// next-token distributions' means and variances) so that each token is
// scored once. Progress goes to stderr.
func (m *AuditModel) Score(ctx context.Context, texts []AuditInput, cfg AuditConfig) ([]AuditScored, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	window, stride, err := m.Windows(cfg)
	if err != nil {
		return nil, err
	}
	var jobs []windowJob
	for i, t := range texts {
		for _, lower := range []bool{false, true} {
			ids := t.Tokens
			if lower {
				ids = t.LowerTokens
			}
			for _, sp := range StrideWindows(len(ids), window, stride) {
				jobs = append(jobs, windowJob{text: i, lower: lower, span: sp, ids: ids[sp.Start:sp.End]})
			}
		}
	}
	batch := m.BatchSize(AuditConfig{BatchSize: cfg.BatchSize, Window: window})
	type part struct {
		nll       []float32
		mean, vrc []float64
	}
	parts := make([]part, len(jobs))
	windows := make([][]int32, len(jobs))
	for i, j := range jobs {
		windows[i] = j.ids
	}
	err = inBatches(ctx, windows, batch, "audit: scoring windows", func(idx []int, ws [][]int32) error {
		scores, err := engine.ScoreWindows(m.g, ws, make([][2]int, len(ws)), engine.SpanOptions{})
		if err != nil {
			return err
		}
		for k, i := range idx {
			s, keep := scores[k], jobs[i].span.Keep
			parts[i] = part{nll: s.NLL[keep:]}
			if !jobs[i].lower {
				parts[i].mean, parts[i].vrc = s.Mean[keep:], s.Var[keep:]
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]AuditScored, len(texts))
	means := make([][]float64, len(texts))
	vars := make([][]float64, len(texts))
	for i, j := range jobs { // jobs are in text order, windows in order
		o := &out[j.text]
		if j.lower {
			o.LowerLosses = append(o.LowerLosses, parts[i].nll...)
			continue
		}
		o.Losses = append(o.Losses, parts[i].nll...)
		means[j.text] = append(means[j.text], parts[i].mean...)
		vars[j.text] = append(vars[j.text], parts[i].vrc...)
		o.NWindows++
	}
	for i := range out {
		out[i].MinKPP = MinKPlusPlus(out[i].Losses, means[i], vars[i], cfg.MinKFraction)
		if want := len(texts[i].Tokens) - 1; len(out[i].Losses) != want {
			return nil, fmt.Errorf("%s: scored %d tokens of %d: the windows do not cover the text", texts[i].Where, len(out[i].Losses), want)
		}
	}
	return out, nil
}
