package loss

import "fmt"

// Masker decides which targets of one row are left out of the loss.
// targets is one row's targets (row[1:L+1]); Mask sets dropped[i] for every
// index i of targets (true = left out of the loss) and does not allocate.
// dropped must be at least as long as targets. A Masker may be shared by
// goroutines.
type Masker interface {
	Mask(targets []int32, dropped []bool)
}

// New builds the Masker a config asks for, after validating it. A disabled
// config (strategy "none" or k = 0) gives a Masker that keeps every target.
func New(cfg Config) (Masker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return noneMasker{}, nil
	}
	switch cfg.Strategy {
	case StrategyStatic:
		return staticMasker{k: cfg.K, start: cfg.Start}, nil
	case StrategyHashTable:
		return newHashTableMasker(cfg.K, cfg.H), nil
	case StrategyHashAvalanche:
		return newAvalancheMasker(cfg.K, cfg.H), nil
	case StrategyRandom:
		return newRandomMasker(cfg.K, cfg.Seed), nil
	case StrategyRolling:
		return newRollingMasker(cfg.K, cfg.H, cfg.Seed, cfg.ExemptIDs), nil
	}
	// Validate accepts only the names handled above.
	return nil, fmt.Errorf("goldfish.strategy = %q: no masker for it", cfg.Strategy)
}

// MaskBatch masks each row of a batch into the matching stretch of dropped,
// which is laid out row after row (len(rows) * width, width = the longest
// row); entries past a short row's end are left false. first is the global
// position of rows[0] in the training stream (rows[i] is at first+i): a
// RowMasker keys its decisions on it, so a resumed run, which starts
// mid-stream, masks each row as an uninterrupted run did.
func MaskBatch(m Masker, first uint64, rows [][]int32, dropped []bool) error {
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	if len(dropped) != len(rows)*width {
		return fmt.Errorf("mask batch: dropped has %d entries, want %d rows x %d", len(dropped), len(rows), width)
	}
	rm, byRow := m.(RowMasker)
	for i, r := range rows {
		out := dropped[i*width : (i+1)*width]
		clear(out[len(r):])
		if byRow {
			rm.MaskRow(first+uint64(i), r, out[:len(r)])
		} else {
			m.Mask(r, out[:len(r)])
		}
	}
	return nil
}

// checkLen panics on a caller bug that would otherwise write out of range or
// leave decisions unset.
func checkLen(targets []int32, dropped []bool) {
	if len(dropped) < len(targets) {
		panic(fmt.Sprintf("loss: Mask: dropped has %d entries for %d targets", len(dropped), len(targets)))
	}
}

type noneMasker struct{}

func (noneMasker) Mask(targets []int32, dropped []bool) {
	checkLen(targets, dropped)
	clear(dropped[:len(targets)])
}

// staticMasker drops absolute positions start, start+k, start+2k, ...
type staticMasker struct{ k, start int }

func (m staticMasker) Mask(targets []int32, dropped []bool) {
	checkLen(targets, dropped)
	d := dropped[:len(targets)]
	clear(d)
	for p := m.start; p < len(d); p += m.k {
		d[p] = true
	}
}
