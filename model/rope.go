package model

import (
	"math"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// ropeTable holds cos and signed-sin tables [Context, RotaryDim]:
// sinSigned carries rotate-half's sign (−sin on the first half), so that
// rope(x) = x·cos + swapHalves(x)·sinSigned.
type ropeTable struct{ cos, sinSigned *ts.Tensor }

// newRopeTable builds the tables for positions 0..Context-1 with base
// theta: inverse frequency theta^(−2i/rot) for i < rot/2, each repeated in
// both halves, rescaled by Config.RopeScaling when scaled (the global
// layers' table; Gemma 3's local layers keep plain frequencies). The angles
// are computed in float64 and rounded once.
func newRopeTable(c Config, theta float64, scaled bool, dev gotch.Device) (ropeTable, error) {
	n, rot := c.Context, c.RotaryDim()
	half := rot / 2
	invFreq := make([]float64, half)
	for i := range invFreq {
		invFreq[i] = math.Pow(theta, -2*float64(i)/float64(rot))
	}
	if scaled {
		switch c.RopeScaling {
		case "llama3":
			llama3Scale(invFreq, c)
		case "linear":
			for i := range invFreq {
				invFreq[i] /= c.RopeFactor
			}
		}
	}
	cv := make([]float32, n*rot)
	sv := make([]float32, n*rot)
	for p := 0; p < n; p++ {
		for i, f := range invFreq {
			ang := float64(p) * f
			co, si := float32(math.Cos(ang)), float32(math.Sin(ang))
			cv[p*rot+i], cv[p*rot+half+i] = co, co
			sv[p*rot+i], sv[p*rot+half+i] = -si, si
		}
	}
	var r ropeTable
	var err error
	if r.cos, err = tensorOf(cv, []int64{int64(n), int64(rot)}, dev); err != nil {
		return r, err
	}
	if r.sinSigned, err = tensorOf(sv, []int64{int64(n), int64(rot)}, dev); err != nil {
		return r, err
	}
	return r, nil
}

// llama3Scale applies Llama 3.1's frequency rescaling (transformers'
// modeling_rope_utils): wavelengths longer than original/low_freq_factor
// are slowed by factor, those shorter than original/high_freq_factor kept,
// and the band between interpolated smoothly.
func llama3Scale(invFreq []float64, c Config) {
	orig := float64(c.RopeOriginalContext)
	lowWave, highWave := orig/c.RopeLowFreqFactor, orig/c.RopeHighFreqFactor
	for i, f := range invFreq {
		wave := 2 * math.Pi / f
		switch {
		case wave < highWave:
		case wave > lowWave:
			invFreq[i] = f / c.RopeFactor
		default:
			smooth := (orig/wave - c.RopeLowFreqFactor) / (c.RopeHighFreqFactor - c.RopeLowFreqFactor)
			invFreq[i] = (1-smooth)*f/c.RopeFactor + smooth*f
		}
	}
}
