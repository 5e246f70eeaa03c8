package train

import (
	"runtime"
	"testing"

	"github.com/memo-research/memo/model"
)

// The cost of a LoRA step beside a full fine-tuning step on the same
// model and batch (docs/MITIGATIONS.md): go test ./train -run '^$'
// -bench 'StepFull|StepLoRA' -benchtime 10x.
func BenchmarkStepFull(b *testing.B) { benchStep(b, false) }
func BenchmarkStepLoRA(b *testing.B) { benchStep(b, true) }

func benchStep(b *testing.B, lora bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cfg, _, lcfg := loraRun()
	cfg.Threads, cfg.GradAccum, cfg.BatchSize, cfg.Block, cfg.Steps = 1, 1, 8, 64, 1000
	cfg.LoRA.Enabled = lora
	mcfg := model.Config{Preset: "small", Vocab: 256, Context: 64, Seed: 3}
	l := testLoop(b, cfg, mcfg, lcfg)
	if _, err := l.trainStep(); err != nil { // warm-up
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.trainStep(); err != nil {
			b.Fatal(err)
		}
		l.step++
	}
}
