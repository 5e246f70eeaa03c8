package experiments

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/memo-research/memo/internal/torchx"
)

// preAVX2Cores are OpenBLAS's x86 kernels (openblas_get_corename's names,
// lower-cased) written for processors without AVX2 and FMA: what OpenBLAS
// falls back to on a CPU it does not recognise, Prescott for an unknown
// Intel model.
var preAVX2Cores = map[string]bool{
	"unknown": true, "katmai": true, "coppermine": true, "northwood": true,
	"prescott": true, "banias": true, "atom": true, "core2": true,
	"penryn": true, "dunnington": true, "nehalem": true, "athlon": true,
	"opteron": true, "opteron_sse3": true, "barcelona": true, "nano": true,
	"sandybridge": true, "bobcat": true, "bulldozer": true,
	"piledriver": true, "steamroller": true,
}

// BLASFallback is the kernel OpenBLAS runs when it is one written before
// AVX2 on a CPU that has AVX2 and FMA, else "": OpenBLAS did not recognise
// the CPU (a virtual machine's generic model name, "Intel(R) Xeon(R)
// Processor", say) and took its oldest fitting kernel. Its Haswell kernel
// (OPENBLAS_CORETYPE=Haswell) runs on such a CPU and is much faster there
// (docs/GPU.md, "What reproduces where").
func BLASFallback() string {
	_, features := cpuInfo()
	return blasFallback(torchx.CPUKernels().BLASCore, features)
}

func blasFallback(core string, features []string) string {
	if !preAVX2Cores[strings.ToLower(core)] {
		return ""
	}
	if !slices.Contains(features, "avx2") || !slices.Contains(features, "fma") {
		return ""
	}
	return core
}

// BLASAdvice is one sentence for a user whose OpenBLAS runs a fallback
// kernel (BLASFallback) by its own choice, else "": nothing is advised
// where OPENBLAS_CORETYPE is set, whatever its value.
func BLASAdvice() string {
	if os.Getenv("OPENBLAS_CORETYPE") != "" {
		return ""
	}
	return blasAdvice(BLASFallback())
}

func blasAdvice(fallback string) string {
	if fallback == "" {
		return ""
	}
	return fmt.Sprintf("OpenBLAS did not recognise this CPU and runs its %s kernel, written before AVX2; the CPU has AVX2 and FMA, so OPENBLAS_CORETYPE=Haswell runs its AVX2 kernel, faster and the one the README's tables were made with", fallback)
}

var blasWarning sync.Once

// warnBLAS logs BLASAdvice once per process, before the first stage that
// computes on the CPU.
func warnBLAS() {
	blasWarning.Do(func() {
		if advice := BLASAdvice(); advice != "" {
			slog.Warn(advice)
		}
	})
}
