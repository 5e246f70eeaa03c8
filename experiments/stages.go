package experiments

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/dist"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/plots"
	"github.com/memo-research/memo/train"
)

// runStage calls one stage package through its documented API. Stages talk
// only through files of the run directory.
func runStage(ctx context.Context, stage string, spec *Spec, dir string, opt Options) error {
	switch stage {
	case "data":
		// The only stage that makes no libtorch call: it runs with the
		// collector that torchx.Init paused, so that its memory is bounded
		// by its buffers rather than by everything it ever allocated.
		return torchx.WithCollector(func() error { return data.Build(ctx, spec.Data, dir) })
	case "train":
		if opt.Train != nil {
			return opt.Train(ctx, spec, dir)
		}
		if opt.BeforeTrain != nil {
			if err := opt.BeforeTrain(); err != nil {
				return err
			}
		}
		return trainStage(ctx, spec, dir)
	}
	if r := processRank(); r > 0 {
		// Only training is data-parallel; the other stages run once, on
		// rank 0 (memo run under a launcher arranges that).
		return rankenv.Tag(r, worldSize(), fmt.Errorf("stage %s runs on one process: leave it to rank 0 (this one is not, by RANK / SLURM_PROCID)", stage))
	}
	switch stage {
	case "references":
		return referencesStage(ctx, spec, dir)
	case "extract":
		ds, err := data.Open(dir)
		if err != nil {
			return err
		}
		// train resolves checkpoints/ to its newest verified checkpoint.
		if err := extract.Run(ctx, spec.ExtractStage(), filepath.Join(dir, checkpoint.DirName), ds, filepath.Join(dir, runfiles.CompletionsFile), &spec.Goldfish); err != nil {
			return err
		}
		return extractCheckpoints(ctx, spec, dir, ds)
	case "eval":
		count, release, err := corpusCounter(dir)
		if err != nil {
			return err
		}
		defer release()
		own, err := eval.RunCounted(spec.EvalStage(), filepath.Join(dir, runfiles.CompletionsFile), spec.Goldfish,
			filepath.Join(dir, runfiles.ScoresFile), filepath.Join(dir, runfiles.SummaryFile), count)
		if err != nil {
			return err
		}
		return evalCheckpoints(spec, dir, own)
	case "plots":
		return plots.Run(dir, spec.Plots, ReadPlotsSpec)
	}
	return fmt.Errorf("unknown stage %q", stage)
}

// trainStage trains in this process, joining the data-parallel group first
// when it is one of several ranks (torchrun's or Slurm's environment, or
// memo run --nproc's launcher). Every rank trains; only rank 0 writes.
func trainStage(ctx context.Context, spec *Spec, dir string) error {
	ds, err := data.Open(dir)
	if err != nil {
		return err
	}
	mcfg, tcfg, err := trainConfigs(spec, ds)
	if err != nil {
		return err
	}
	opts := train.Options{Progress: processRank() == 0}
	if worldSize() == 1 {
		return importLabel(train.Run(ctx, tcfg, mcfg, spec.Goldfish, datasetSource{ds}, dir, opts), spec.Model.InitFrom, tcfg.InitFrom)
	}
	g, err := dist.Init(ctx, dist.Unset())
	if err != nil {
		return err
	}
	opts.Group = g
	if err := train.Run(ctx, tcfg, mcfg, spec.Goldfish, datasetSource{ds}, dir, opts); err != nil {
		// A failed collective leaves the group broken: no closing barrier,
		// the process's exit tears it down.
		return rankenv.Tag(g.Rank(), g.Size(), err)
	}
	if err := g.Close(); err != nil {
		return rankenv.Tag(g.Rank(), g.Size(), fmt.Errorf("leave the group: %w", err))
	}
	return nil
}

// trainConfigs are the model and training settings a spec trains on ds
// with: an imported model's architecture and weights, the vocabulary of
// the dataset's tokenizer. The target model and its reference models
// (references.go) are resolved alike.
func trainConfigs(spec *Spec, ds *data.Dataset) (model.Config, train.Config, error) {
	mcfg, tcfg := spec.Model, spec.Train
	tok, err := ds.Tokenizer()
	if err != nil {
		return mcfg, tcfg, err
	}
	if mcfg.InitFrom != "" {
		// An imported model: its architecture and starting weights.
		if mcfg, err = spec.ResolvedModel(); err != nil {
			return mcfg, tcfg, err
		}
		tcfg.InitFrom = strings.TrimPrefix(mcfg.InitFrom, "hf:")
	}
	if mcfg.Vocab == 0 {
		// The vocabulary is the tokenizer's, known once data has run.
		mcfg.Vocab = tok.VocabSize()
	}
	if _, err := spec.tokenizerFits(mcfg, tok.VocabSize()); err != nil {
		return mcfg, tcfg, err
	}
	return mcfg, tcfg, nil
}

// importLabel names model.init_from in a training error about an imported
// model's weights: train reads them as its train.init_from, a key the
// user's spec does not set.
func importLabel(err error, modelInit, trainInit string) error {
	if err == nil || modelInit == "" {
		return err
	}
	from := fmt.Sprintf("train.init_from = %q", trainInit)
	if !strings.Contains(err.Error(), from) {
		return err
	}
	return &relabeled{msg: strings.ReplaceAll(err.Error(), from, fmt.Sprintf("model.init_from = %q", modelInit)), err: err}
}

// relabeled is an error with another message and the same chain (a
// bad-input mark, an interruption stay visible to errors.As).
type relabeled struct {
	msg string
	err error
}

func (r *relabeled) Error() string { return r.msg }
func (r *relabeled) Unwrap() error { return r.err }
