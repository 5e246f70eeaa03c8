package experiments

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/plots"
	"github.com/memo-research/memo/train"
)

// runStage calls one stage package through its documented API. Stages talk
// only through files of the run directory.
func runStage(ctx context.Context, stage string, spec *Spec, dir string, opt Options) error {
	switch stage {
	case "data":
		return data.Build(ctx, spec.Data, dir)
	case "train":
		if opt.Train != nil {
			return opt.Train(ctx, spec, dir)
		}
		if n := worldSize(); n > 1 {
			return fmt.Errorf("this process is one of %d ranks (WORLD_SIZE / SLURM_NTASKS), but multi-process training is not built into this binary: the dist package provides no process group", n)
		}
		ds, err := data.Open(dir)
		if err != nil {
			return err
		}
		mcfg := spec.Model
		if mcfg.Vocab == 0 {
			// The vocabulary is the tokenizer's, known once data has run.
			tok, err := ds.Tokenizer()
			if err != nil {
				return err
			}
			mcfg.Vocab = tok.VocabSize()
		}
		return train.Run(ctx, spec.Train, mcfg, spec.Goldfish, ds, dir, train.Options{Progress: true})
	case "extract":
		ds, err := data.Open(dir)
		if err != nil {
			return err
		}
		// train resolves checkpoints/ to its newest verified checkpoint.
		return extract.Run(ctx, spec.Extract, filepath.Join(dir, "checkpoints"), ds, filepath.Join(dir, "completions.arrow"))
	case "eval":
		_, err := eval.Run(spec.Eval, filepath.Join(dir, "completions.arrow"), spec.Goldfish, dir)
		return err
	case "plots":
		return plots.Run(dir, spec.Plots)
	}
	return fmt.Errorf("unknown stage %q", stage)
}
