package train

// LoRA in the loop (train.lora): the base model frozen, adapters on the
// layers train.lora.targets names (model.LoRA, PEFT's layout), and only
// the adapters trained. The loop is the replicated one with three
// changes: the optimizer, and so every gradient the strategy reduces and
// clips, sees only the adapters (loop.trainable); each worker replica has
// its own adapters, sharing the master's storage, which every forward
// adds into the weights it adapts (Apply) and takes out again after the
// backward (Restore); and a checkpoint holds the adapters in PEFT's files
// with their AdamW moments and a record of the base (checkpoint/lora.go),
// not the base itself. ZeRO sharding is refused: the state it shards is
// the adapters', a few MB, and the base it would have to shard as well is
// frozen and need not be cut.

import (
	"errors"
	"fmt"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch/ts"
)

// errLoRASharded is Config.Validate's refusal of train.lora with ZeRO.
var errLoRASharded = errors.New("train.lora with train.shard other than none: the adapters train replicated on every rank (their state is small); use train.shard = \"none\"")

// attachLoRA puts train.lora's adapters on g (worker 0's model) and
// freezes g's weights, before the optimizer is built over loop.trainable.
// Rank 0 records the base the adapters train on: train.init_from, or the
// model seed's weights.
func (l *loop) attachLoRA(g *model.GPT) error {
	c := l.cfg.LoRA
	if !c.Enabled {
		return nil
	}
	if l.cfg.sharded() {
		return errLoRASharded
	}
	ad, err := model.NewLoRA(g, model.LoRAOptions{Rank: c.Rank, Alpha: c.Alpha, Dropout: c.Dropout,
		Targets: c.SortedTargets(), Seed: g.Config().Seed})
	if err != nil {
		return err
	}
	l.lora = []*model.LoRA{ad}
	if l.rank != 0 {
		return nil
	}
	src := ""
	if l.cfg.InitFrom != "" {
		if src, _, err = checkpoint.ReadSource(l.cfg.InitFrom); err != nil {
			return fmt.Errorf("train.init_from = %q: %w", l.cfg.InitFrom, err)
		}
	}
	if l.loraBase, err = checkpoint.NewLoRABase(src); err != nil {
		return fmt.Errorf("train.init_from = %q: %w", l.cfg.InitFrom, err)
	}
	if c.BasePrecision == precision.BF16 {
		l.loraBase.Precision = c.BasePrecision
	}
	return nil
}

// holdLoRABase holds the frozen base in train.lora.base_precision
// (model.LoRA.HoldBase), on every rank, once rank 0 has read it (resume or
// train.init_from) and before the workers' replicas alias its weights.
func (l *loop) holdLoRABase() error {
	if len(l.lora) == 0 {
		return nil
	}
	base, err := precision.BaseDType(l.cfg.LoRA.BasePrecision)
	if err == nil {
		err = l.lora[0].HoldBase(base)
	}
	if err != nil {
		return fmt.Errorf("train.lora.base_precision: %w", err)
	}
	return nil
}

// loraWorkers gives every worker replica but the first (the model
// itself) its own adapters, once the workers exist.
func (l *loop) loraWorkers() {
	if len(l.lora) == 0 {
		return
	}
	for _, r := range l.work.reps[len(l.lora):] {
		l.lora = append(l.lora, l.lora[0].Replica(r))
	}
}

// loadWeights reads the checkpoint dir (state st) that the run resumes
// from into the model: the whole weights, or for LoRA the base it
// records, checked against this run's, and the adapters.
func (l *loop) loadWeights(dir string, st checkpoint.State) error {
	switch {
	case len(l.lora) == 0 && st.LoRABase != nil:
		return fmt.Errorf("%s holds a LoRA checkpoint and this run has train.lora off: use a new run directory or train.no_resume = true", dir)
	case len(l.lora) == 0:
		return checkpoint.LoadWeights(l.g, dir)
	case st.LoRABase == nil:
		return fmt.Errorf("%s holds a full fine-tuning checkpoint and this run has train.lora on: use a new run directory or train.no_resume = true", dir)
	case *st.LoRABase != *l.loraBase:
		return fmt.Errorf("%s holds adapters of the base %+v and this run's base is %+v: use a new run directory or train.no_resume = true", dir, *st.LoRABase, *l.loraBase)
	}
	if err := st.LoRABase.Fill(l.g); err != nil {
		return err
	}
	return checkpoint.LoadAdapter(l.lora[0], dir)
}

// save writes the checkpoint of state st with the optimizer tensors given.
func (l *loop) save(optimizer []checkpoint.Named, st checkpoint.State) (string, error) {
	if len(l.lora) == 0 {
		return checkpoint.Save(l.runDir, l.g, optimizer, st, l.cfg.KeepCheckpoints)
	}
	st.LoRABase = l.loraBase
	return checkpoint.SaveLoRA(l.runDir, l.lora[0], l.g.Config(), optimizer, st, l.cfg.KeepCheckpoints)
}

// loraReplicated is the replicated strategy of a LoRA run.
type loraReplicated struct{ *replicated }

func newLoRAStrategy(l *loop) (strategy, error) {
	if l.cfg.sharded() {
		return nil, errLoRASharded
	}
	return loraReplicated{&replicated{l: l}}, nil
}

// start broadcasts rank 0's base and adapters when it read them (a base
// from train.init_from, adapters from a checkpoint); otherwise both are
// the seed's on every rank.
func (s loraReplicated) start(loaded bool) error {
	if !loaded {
		return nil
	}
	l := s.l
	t := append(paramTensors(l.g.Params()), paramTensors(l.lora[0].Params())...)
	if err := l.group.Broadcast(t, 0); err != nil {
		return fmt.Errorf("broadcast the base and adapters from rank 0: %w", err)
	}
	return nil
}

func (s loraReplicated) zeroGrads() {
	for _, ad := range s.l.lora {
		zeroGrads(ad.Params())
	}
}

// forwardBackward is the replicated one with each worker's adapters
// added into its weights for the forward and the backward.
func (s loraReplicated) forwardBackward(rows [][]int32, dropped []bool, lossOf lossFunc) ([]workerLoss, error) {
	l := s.l
	res := make([]workerLoss, l.work.n())
	k := l.work.runSplit(len(rows), func(w int, g *model.GPT, lo, hi int) {
		l.lora[w].Apply()
		res[w] = forwardLoss(g, rows[lo:hi], dropped[lo*l.block:hi*l.block], l.block, l.cfg.ActivationCheckpointing, lossOf)
		l.lora[w].Restore()
	})
	return res[:k], nil
}

// reduce adds the workers' adapter gradients into the master's, in worker
// order, then reduces over the ranks as the replicated strategy does.
func (s loraReplicated) reduce() error {
	master := s.l.lora[0].Params()
	torchx.NoGrad(func() {
		for _, ad := range s.l.lora[1:] {
			addGrads(master, ad.Params())
		}
	})
	return s.replicated.reduce()
}

// eval is the replicated one through each worker's adapters.
func (s loraReplicated) eval(rows [][]int32) ([]evalSum, error) {
	l := s.l
	sums := make([]evalSum, l.work.n())
	errs := make([]error, l.work.n())
	k := l.work.runSplit(len(rows), func(w int, g *model.GPT, lo, hi int) {
		fwd := func(ids *ts.Tensor) (*ts.Tensor, error) { return l.lora[w].ForwardForLoss(ids), nil }
		sums[w].sum, sums[w].n, errs[w] = evalLogits(fwd, rows[lo:hi], l.block, g.Device())
	})
	return sums[:k], errors.Join(errs...)
}
