package dpaccount

import (
	"encoding/json"
	"math"
	"testing"
)

// TestAccountantMatchesOpacusStepByStep: Opacus's test_rdp_accountant
// steps its accountant 2250 times (opacus/tests/accountants_test.py:94-104)
// and gets 7.32911117143; stepping this one the same way gives it too, as
// one phase, and the same after a JSON round trip (a checkpoint's resume).
func TestAccountantMatchesOpacusStepByStep(t *testing.T) {
	var a Accountant
	for i := 0; i < 1000; i++ {
		a.Step(0.04, 1.5)
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var resumed Accountant
	if err := json.Unmarshal(b, &resumed); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1250; i++ {
		resumed.Step(0.04, 1.5)
	}
	if len(resumed.History) != 1 || resumed.Steps() != 2250 {
		t.Fatalf("history %+v: want one phase of 2250 steps", resumed.History)
	}
	eps, err := resumed.Epsilon(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(eps-7.32911117143) > 5e-8 {
		t.Errorf("ε = %.11f, want 7.32911117143", eps)
	}
}

func TestAccountantPhases(t *testing.T) {
	var a Accountant
	if eps, err := a.Epsilon(1e-5); eps != 0 || err != nil {
		t.Errorf("no steps: ε = %v, %v; want 0", eps, err)
	}
	a.Step(0.01, 1)
	a.Step(0.01, 1)
	a.Step(0.02, 1)
	a.Step(0.01, 1)
	if len(a.History) != 3 || a.History[0].Steps != 2 {
		t.Errorf("history %+v: want phases of 2, 1, 1 steps", a.History)
	}
	want, _, err := Epsilon([]Phase{{0.01, 1, 3}, {0.02, 1, 1}}, 1e-5, nil)
	if err != nil {
		t.Fatal(err)
	}
	// RDP composes by sum, whatever the order of the phases.
	if got, _ := a.Epsilon(1e-5); math.Abs(got-want) > 1e-12 {
		t.Errorf("ε = %v, want %v", got, want)
	}
	a.Step(0.01, 0)
	if got, _ := a.Epsilon(1e-5); !math.IsInf(got, 1) {
		t.Errorf("a step without noise: ε = %v, want +Inf", got)
	}
}
