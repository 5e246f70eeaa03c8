package experiments

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/eval/calibrated"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/plots"
)

// TrainingKey identifies what training a spec asks for: the sha256 of the
// resolved spec without its name and its extract, eval, plots and mia
// tables (attack and reporting settings, and the reference models trained
// beside the target, none of which change the trained model) or its
// scheduler's. Two specs with the same key train the same model from the
// same data, so a sweep whose points differ only in those tables trains
// once; a point that reuses a model trains its own reference models.
func (s *Spec) TrainingKey() (string, error) {
	c := *s
	c.Name, c.Sweep, c.SweepPoints = "", nil, nil
	c.Extract, c.Eval, c.Plots = extract.Config{}, eval.Config{}, plots.Config{}
	c.MIA, c.Slurm = calibrated.Config{}, SlurmConfig{}
	b, err := c.TOML()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// reusedStages are the stages an attack-only run takes from the run that
// trained its model, and what each links: data/ for data; checkpoints/ and
// metrics.arrow (the training curve its figures draw) for train.
var reusedStages = map[string][]string{
	"data":  {"data"},
	"train": {checkpoint.DirName, runfiles.MetricsFile},
}

// linkTrained is the data or train stage of a run whose model another run
// (src) trained: after checking that src trained exactly what spec asks
// for and finished that stage, it links src's outputs into dir with
// relative symlinks, so the run directory reads like any other (extract
// finds dir/checkpoints, plots dir/metrics.arrow) while the trained files
// exist once, in src.
func linkTrained(stage string, spec *Spec, dir, src string) error {
	if err := checkReusable(stage, spec, src); err != nil {
		return err
	}
	for _, name := range reusedStages[stage] {
		target := filepath.Join(src, name)
		if _, err := os.Stat(target); errors.Is(err, os.ErrNotExist) && name == runfiles.MetricsFile {
			continue // a run trained by an older memo may lack it; figures skip the curve
		} else if err != nil {
			return fmt.Errorf("reuse training of %s: %w", src, err)
		}
		if err := linkInto(dir, name, target); err != nil {
			return err
		}
	}
	return nil
}

// checkReusable refuses src as the stage's source for spec unless src is
// a run that trained exactly what spec asks for and finished the stage.
func checkReusable(stage string, spec *Spec, src string) error {
	srcSpec, ok, err := ReadRun(src)
	if err != nil {
		return fmt.Errorf("reuse training of %s: %w", src, err)
	}
	if !ok {
		return badinput.Errorf("reuse training of %s: not a run directory (no %s)", src, runfiles.ConfigFile)
	}
	want, err := spec.TrainingKey()
	if err != nil {
		return err
	}
	have, err := srcSpec.TrainingKey()
	if err != nil {
		return err
	}
	if want != have {
		return badinput.Errorf("reuse training of %s: it was trained with other data, model, train, goldfish or seed settings than %s asks for; only extract, eval, plots and mia may differ", src, spec.Name)
	}
	m, err := ReadManifest(src)
	if err != nil {
		return fmt.Errorf("reuse training of %s: %w", src, err)
	}
	switch rec := m.Stage(stage); rec.Status {
	case StatusDone:
	case StatusFailed:
		return badinput.Errorf("reuse training of %s: its %s stage failed (see its log and manifest.json); mend it and run it first", src, stage)
	default:
		return badinput.Errorf("reuse training of %s: its %s stage is %s, not done (run it first)", src, stage, rec.Status)
	}
	return nil
}

// linkInto makes dir/name a relative symlink to target, keeping one that
// already points there (a resumed run).
func linkInto(dir, name, target string) error {
	link := filepath.Join(dir, name)
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	absTarget, err := filepath.Abs(target)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(absDir, absTarget)
	if err != nil {
		return fmt.Errorf("link %s to %s: %w", link, target, err)
	}
	if old, err := os.Readlink(link); err == nil && old == rel {
		return nil
	}
	if _, err := os.Lstat(link); err == nil {
		return fmt.Errorf("link %s to %s: %s already exists and is not that link; move it away or give the run another name", link, target, link)
	}
	if err := os.Symlink(rel, link); err != nil {
		return fmt.Errorf("link %s to %s: %w", link, target, err)
	}
	return nil
}

// reusedDigest digests what the run that dir's stage st links into
// (found through the links themselves, which follow a moved source)
// records as that stage's outputs in its manifest; "" when the links or
// the source's manifest are gone.
func reusedDigest(dir, st string) string {
	names := reusedStages[st]
	if len(names) == 0 {
		return ""
	}
	target, err := os.Readlink(filepath.Join(dir, names[0]))
	if err != nil {
		return ""
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	m, err := ReadManifest(filepath.Dir(target))
	if err != nil {
		return ""
	}
	rec := m.Stage(st)
	if rec.Status != StatusDone {
		return ""
	}
	b, err := json.Marshal(rec.Outputs) // map keys sorted: one digest for one record
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// sourceMoved reports whether rec, a finished stage of the run in dir
// that linked another run's outputs, now leads to another record of
// that stage than it linked (the source trained again, or gone). Older
// manifests record no digest, and are taken as they are.
func (rec *StageRecord) sourceMoved(dir string) bool {
	return rec.Status == StatusDone && rec.ReusedOutputs != "" && reusedDigest(dir, rec.Name) != rec.ReusedOutputs
}

// followMovedTrainer keeps the runs beside dir that reuse its training
// (attack-only sweep points: their data/, checkpoints/ and metrics.arrow
// are relative links into it) pointing at it once --force has moved it
// aside to aside: followed to the model retrained in its place, the
// links made those runs' config.toml, scores and figures describe a model
// they never attacked. Their manifests record the new targets, so they
// stay finished. Runs elsewhere that link into dir are not looked for.
func followMovedTrainer(dir, aside string) {
	parent := filepath.Dir(dir)
	from, to := filepath.Base(dir), filepath.Base(aside)
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		sib := filepath.Join(parent, e.Name())
		if !e.IsDir() || sib == dir || sib == aside {
			continue
		}
		moved := map[string]string{} // link name -> its new target
		for _, names := range reusedStages {
			for _, name := range names {
				link := filepath.Join(sib, name)
				if t, err := os.Readlink(link); err != nil || t != filepath.Join("..", from, name) {
					continue
				}
				target := filepath.Join("..", to, name)
				tmp := link + ".relink-tmp"
				_ = os.Remove(tmp)
				if err := os.Symlink(target, tmp); err != nil {
					slog.Warn("could not keep a run that reuses the moved training pointing at it", "run", sib, "err", err)
					continue
				}
				if err := os.Rename(tmp, link); err != nil {
					_ = os.Remove(tmp)
					slog.Warn("could not keep a run that reuses the moved training pointing at it", "run", sib, "err", err)
					continue
				}
				moved[name] = target
			}
		}
		if len(moved) == 0 {
			continue
		}
		if m, err := ReadManifest(sib); err == nil {
			for _, rec := range m.Stages {
				for rel, o := range rec.Outputs {
					if target, ok := moved[rel]; ok && strings.HasPrefix(o.SHA256, "link:") {
						o.SHA256 = "link:" + target
						rec.Outputs[rel] = o
					}
				}
			}
			if err := m.write(sib); err != nil {
				slog.Warn("could not record the moved training in a run that reuses it", "run", sib, "err", err)
			}
		}
		slog.Warn("a run that reuses the moved training now links to it where it moved", "run", sib, "training", aside)
	}
}
