package experiments

import (
	"errors"
	"slices"
	"strings"

	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train/dpaccount"
)

// dropOffMitigations leaves [train.dp] and [train.lora] out of a run's
// config.toml while they are off, so that every spec written before they
// existed keeps its config.toml and Hash.
func dropOffMitigations(b []byte, s *Spec) []byte {
	if !s.Train.DP.Enabled {
		b = dropTable(b, "train.dp")
	}
	if !s.Train.LoRA.Enabled {
		b = dropTable(b, "train.lora")
	}
	return b
}

// IdleMitigationKeys are the train.dp.* and train.lora.* keys the spec
// sets while that table's enabled is false, so that they change nothing:
// noise_multiplier = 1 without enabled = true trains without privacy. A
// sweep's base table holds what its points turn on, so a sweep has none.
func (s *Spec) IdleMitigationKeys() []string {
	if s.IsSweep() {
		return nil
	}
	train, _ := s.raw["train"].(map[string]any)
	var keys []string
	for _, m := range []struct {
		table string
		on    bool
	}{{"dp", s.Train.DP.Enabled}, {"lora", s.Train.LoRA.Enabled}} {
		t, _ := train[m.table].(map[string]any)
		if m.on || len(t) == 0 {
			continue
		}
		for k := range t {
			if k != "enabled" {
				keys = append(keys, "train."+m.table+"."+k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// checkMitigations holds [train.dp] and [train.lora] to the data and the
// model, where memo config can be sure before any work. N, the rows of the
// training stream, is known only once the data stage has chunked the
// documents, but every target document makes at least one row, so N >=
// data.targets: a δ >= 1/data.targets is >= 1/N, and q = batch_size/N is at
// most batch_size/data.targets. ε only grows with q and with the steps, so
// a target ε out of reach at that q and at train.steps (1 when the run is
// given in epochs) is out of reach for the run too. What depends on N
// itself is checked when training starts.
func (s *Spec) checkMitigations(m model.Config, fail func(key, format string, args ...any) error) error {
	if dp := s.Train.DP; dp.Enabled {
		if s.Data.PretrainPasses > 0 {
			// The passes come first in the stream, but Poisson sampling
			// draws every step from all of it: they would be mixed into
			// every step, a run without the pretraining the spec asks for.
			return fail("data.pretrain_passes", "data.pretrain_passes = %d with train.dp.enabled = true: DP-SGD samples every step from the whole training stream, so the pretraining passes would not come first but be mixed into every step; pretrain without DP and fine-tune from its checkpoint (train.init_from), or set data.pretrain_passes = 0", s.Data.PretrainPasses)
		}
		if n := s.Data.Targets; n > 0 && dp.Delta >= 1/float64(n) {
			return fail("train.dp.delta", "train.dp.delta = %v: must be below 1/N for N training rows, and N >= data.targets = %d (1/N <= %v); a δ that large lets a mechanism publish a row outright", dp.Delta, n, 1/float64(n))
		}
		q := dp.SampleRate
		if q == 0 && s.Data.Targets > 0 {
			q = min(1, float64(s.Train.BatchSize)/float64(s.Data.Targets))
		}
		if dp.TargetEpsilon > 0 && q > 0 {
			steps := int64(max(s.Train.Steps, 1))
			if _, err := dpaccount.NoiseFor(dp.TargetEpsilon, q, steps, dp.Delta); errors.Is(err, dpaccount.ErrUnreachable) {
				return fail("train.dp.target_epsilon", "train.dp.target_epsilon = %v: no noise multiplier up to %g reaches it at train.dp.delta = %v (the accountant's orders, Opacus's, stop at 63, which bounds ε from below); raise it or δ", dp.TargetEpsilon, dpaccount.MaxNoise, dp.Delta)
			} else if err != nil {
				return fail("train.dp.target_epsilon", "train.dp.target_epsilon = %v: %v", dp.TargetEpsilon, err)
			}
		}
	}
	if lo := s.Train.LoRA; lo.Enabled {
		if _, err := model.LoRASites(m, lo.Targets, lo.Rank); err != nil {
			key := "train.lora.targets"
			if strings.HasPrefix(err.Error(), "train.lora.rank") {
				key = "train.lora.rank"
			}
			return fail(key, "%v", err)
		}
	}
	return nil
}
