package train

import "github.com/memo-research/memo/internal/torchx"

// phaseEvents time a step's phases on the GPU with CUDA events, for memo
// bench train: host clocks measure what the host waited, and a step's
// optimizer runs on into the next step after the host has moved on. Marks
// 0, 1 and 2 are the step's start, the end of its forward and backward
// passes, and the end of its update (the last kernel queued). Two sets
// alternate so that a step's events are read after the next step, when the
// GPU has long passed them, and reading adds no wait to the step measured.
type phaseEvents struct {
	sets    [2][3]*torchx.CUDAEvent
	pending [2]bool // a set's step is measured and not yet read
	cur     int
	// model and update are the summed GPU milliseconds of the read steps'
	// forward and backward (mark 0 to 1) and of their reduction, clipping
	// and update (1 to 2); steps counts them.
	model, update float64
	steps         int
}

// newPhaseEvents is nil (no timing) when CUDA has no events: a CPU run, or
// a build without the cuda tag.
func newPhaseEvents() *phaseEvents {
	p := &phaseEvents{}
	for i := range p.sets {
		for j := range p.sets[i] {
			if p.sets[i][j] = torchx.NewCUDAEvent(); p.sets[i][j] == nil {
				p.free()
				return nil
			}
		}
	}
	return p
}

// mark records point i of the current step; a nil p does nothing.
func (p *phaseEvents) mark(i int) {
	if p != nil {
		p.sets[p.cur][i].Record()
	}
}

// next ends the current step: measure says whether it counts, read after
// the following step (or by flush).
func (p *phaseEvents) next(measure bool) {
	if p == nil {
		return
	}
	p.cur = 1 - p.cur
	if p.pending[p.cur] {
		p.read(p.cur)
	}
	p.pending[1-p.cur] = measure
}

// flush reads the last step's events, waiting for them.
func (p *phaseEvents) flush() {
	if p == nil {
		return
	}
	for i := range p.sets {
		if p.pending[i] {
			p.read(i)
		}
	}
}

func (p *phaseEvents) read(i int) {
	p.pending[i] = false
	e := p.sets[i]
	m, u := e[0].ElapsedMS(e[1]), e[1].ElapsedMS(e[2])
	if m < 0 || u < 0 {
		return
	}
	p.model += m
	p.update += u
	p.steps++
}

// seconds are the mean GPU seconds a read step spent in each phase; 0, 0
// with none read.
func (p *phaseEvents) seconds() (model, update float64) {
	if p == nil || p.steps == 0 {
		return 0, 0
	}
	n := float64(p.steps) * 1e3
	return p.model / n, p.update / n
}

func (p *phaseEvents) free() {
	for i := range p.sets {
		for _, e := range p.sets[i] {
			if e != nil {
				e.Free()
			}
		}
	}
}
