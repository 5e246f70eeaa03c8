package experiments

import (
	"strings"
	"testing"
)

func TestBLASFallback(t *testing.T) {
	avx2 := []string{"avx", "avx2", "f16c", "fma"}
	avx512 := []string{"avx", "avx2", "avx512f", "fma"}
	for _, tc := range []struct {
		name     string
		core     string
		features []string
		want     string
	}{
		{"unrecognised Xeon with AVX-512", "Prescott", avx512, "Prescott"},
		{"unrecognised CPU, lower-case name", "core2", avx2, "core2"},
		{"Sandybridge has AVX but no FMA", "Sandybridge", avx2, "Sandybridge"},
		{"recognised Intel", "Haswell", avx2, ""},
		{"recognised AVX-512", "SkylakeX", avx512, ""},
		{"recognised AMD", "Zen", avx2, ""},
		{"a core memo does not know", "FutureLake", avx512, ""},
		{"old kernel on a CPU without AVX2", "Prescott", []string{"avx"}, ""},
		{"AVX2 without FMA", "Prescott", []string{"avx", "avx2"}, ""},
		{"no OpenBLAS", "", avx2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := blasFallback(tc.core, tc.features); got != tc.want {
				t.Errorf("blasFallback(%q, %v) = %q, want %q", tc.core, tc.features, got, tc.want)
			}
		})
	}
}

// TestBLASAdvice: advice names the fallback kernel and the one to set, and
// a set OPENBLAS_CORETYPE, even the fallback's own name, is a choice memo
// does not advise against.
func TestBLASAdvice(t *testing.T) {
	got := blasAdvice("Prescott")
	for _, w := range []string{"runs its Prescott kernel", "OPENBLAS_CORETYPE=Haswell"} {
		if !strings.Contains(got, w) {
			t.Errorf("blasAdvice(Prescott) = %q, want it to say %q", got, w)
		}
	}
	if got := blasAdvice(""); got != "" {
		t.Errorf("blasAdvice with no fallback = %q, want none", got)
	}
	t.Setenv("OPENBLAS_CORETYPE", "Prescott")
	if got := BLASAdvice(); got != "" {
		t.Errorf("BLASAdvice() with OPENBLAS_CORETYPE=Prescott = %q, want none", got)
	}
}
