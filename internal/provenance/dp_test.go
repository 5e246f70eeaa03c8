package provenance

import (
	"encoding/json"
	"math"
	"testing"
)

// A DP record's ε goes through JSON as a number, and +Inf (σ = 0) as
// null; the checkpoint's extra keys (its accountant) are ignored.
func TestDPRecordJSON(t *testing.T) {
	for _, eps := range []float64{7.5, math.Inf(1)} {
		var r DPRecord
		r.SetEps(eps)
		r.Delta, r.NoiseMultiplier, r.SampleRate, r.MaxGradNorm, r.Steps, r.Rows = 1e-5, 0.9, 0.01, 1, 100, 1600
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseDP(append(b[:len(b)-1:len(b)-1], []byte(`,"accountant":{"history":[]}}`)...))
		if err != nil {
			t.Fatal(err)
		}
		if back.Eps() != eps || back.Steps != 100 || back.Rows != 1600 || back.NoiseMultiplier != 0.9 {
			t.Errorf("ε %v: JSON %s read back as %+v (ε %v)", eps, b, back, back.Eps())
		}
	}
	if r, err := ParseDP(nil); r != nil || err != nil {
		t.Errorf("ParseDP(nil) = %v, %v; want nil, nil", r, err)
	}
	if _, err := ParseDP([]byte("{eps")); err == nil {
		t.Error("ParseDP of broken JSON: no error")
	}
}
