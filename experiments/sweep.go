package experiments

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/plots"
	"github.com/pelletier/go-toml/v2"
)

// Point is one run of a sweep.
type Point struct {
	Name   string         // e.g. "k=4_preset=tiny"
	Values map[string]any // axis key -> value
	Spec   *Spec          // the resolved spec of this run (no sweep, Name = point name)
	Doc    []byte         // the spec file `memo run` gets for this point
	// Reuses names the earlier point that trains this point's model when
	// the two differ only in extract, eval, plots and mia keys (same
	// TrainingKey): this point links that run's data and checkpoints and
	// only attacks. Empty for a point that trains.
	Reuses string
}

// Expand turns a sweep spec into its grid of runs, then its extra points
// ([[sweep_points]]), checking that every value fits its key: a bad value
// fails before anything runs.
func (s *Spec) Expand() ([]Point, error) {
	if !s.IsSweep() {
		return nil, fmt.Errorf("%s: the spec has no [sweep] table", s.file)
	}
	rawSweep, _ := s.raw["sweep"].(map[string]any)
	sweep := make(map[string][]any, len(rawSweep))
	for k, v := range rawSweep {
		sweep[k], _ = v.([]any)
	}
	axes := sortedAxes(sweep)
	labels := axisLabels(axes)
	var pts []Point
	seen := map[string]bool{}
	trainer := map[string]string{} // TrainingKey -> first point with it
	add := func(table string, axes []Axis, vals []any, name string) error {
		if seen[name] {
			return &ConfigError{File: s.file, Line: s.lineOf(table), Key: table, Msg: fmt.Sprintf("two sweep points are both named %q: an axis or a [[sweep_points]] table repeats a point", name)}
		}
		seen[name] = true
		doc := deepCopy(s.raw).(map[string]any)
		delete(doc, "sweep")
		delete(doc, "sweep_points")
		doc["name"] = name
		values := map[string]any{}
		for i, a := range axes {
			if s.set[a.Key] {
				// The axis's value replaced --set's on every point, and
				// `memo config` showed --set's: say so, not run the grid.
				hint := fmt.Sprintf("--set 'sweep.\"%s\"=[...]'", a.Key)
				if table != "sweep" {
					hint = "edit its [[" + table + "]] tables"
				}
				return &ConfigError{File: s.file, Key: a.Key, Msg: fmt.Sprintf("--set gave it, but the spec sweeps it (in [%s]) and the sweep's values replace --set's on every point; change the sweep instead: %s", table, hint)}
			}
			if err := setPath(doc, a.Key, vals[i]); err != nil {
				return &ConfigError{File: s.file, Line: s.lineOf(table + "." + a.Key), Key: table + "." + a.Key, Msg: err.Error()}
			}
			values[a.Key] = vals[i]
		}
		b, err := toml.Marshal(doc)
		if err != nil {
			return fmt.Errorf("%s: encode sweep point %s: %w", s.file, name, err)
		}
		ps, err := ParseBytes(s.file+" [sweep point "+name+"]", b)
		if err != nil {
			return s.pointError(table, name, axes, err)
		}
		// Errors found later (CheckDevices) point into the sweep's file,
		// where no line holds a value the point's axes set.
		ps.lines, ps.set = s.lines, maps.Clone(s.set)
		if ps.lines == nil {
			ps.lines = s.doc
		}
		if ps.set == nil {
			ps.set = map[string]bool{}
		}
		for _, a := range axes {
			ps.set[a.Key] = true
		}
		key, err := ps.TrainingKey()
		if err != nil {
			return err
		}
		reuses := trainer[key]
		if reuses == "" {
			trainer[key] = name
		}
		pts = append(pts, Point{Name: name, Values: values, Spec: ps, Doc: b, Reuses: reuses})
		return nil
	}
	for _, vals := range grid(axes) {
		if len(axes) == 0 {
			break // only [[sweep_points]]: no grid point named ""
		}
		if err := add("sweep", axes, vals, pointName(labels, vals)); err != nil {
			return nil, err
		}
	}
	if err := s.checkIdleAxes(axes, pts); err != nil {
		return nil, err
	}
	rawPts, _ := s.raw["sweep_points"].([]any)
	// One short name a key over every point: shortened point by point, a
	// DP-only point and a LoRA-only point were both "k=0_enabled=true"
	// (refused as repeats), and a point's name did not say which
	// mitigation it enabled.
	var every []Axis
	keyed := map[string]bool{}
	for _, rp := range rawPts {
		m, _ := rp.(map[string]any)
		for _, k := range sortedKeys(m) {
			if !keyed[k] {
				keyed[k] = true
				every = append(every, Axis{Key: k})
			}
		}
	}
	short := map[string]string{}
	for i, l := range axisLabels(every) {
		short[every[i].Key] = l
	}
	for _, rp := range rawPts {
		m, _ := rp.(map[string]any)
		var pAxes []Axis
		var vals []any
		var labels []string
		for _, k := range sortedKeys(m) {
			pAxes = append(pAxes, Axis{Key: k, Values: []any{m[k]}})
			vals = append(vals, m[k])
			labels = append(labels, short[k])
		}
		if err := add("sweep_points", pAxes, vals, pointName(labels, vals)); err != nil {
			return nil, err
		}
	}
	return pts, nil
}

// checkIdleAxes refuses a grid axis over a mitigation's settings
// (train.dp.*, train.lora.*) while that mitigation is off at every point:
// the table is left out of each point's config.toml, so the points would
// differ in name only, with identical numbers.
func (s *Spec) checkIdleAxes(axes []Axis, pts []Point) error {
	for _, a := range axes {
		for _, m := range []struct {
			table string
			on    func(*Spec) bool
		}{
			{"train.dp", func(p *Spec) bool { return p.Train.DP.Enabled }},
			{"train.lora", func(p *Spec) bool { return p.Train.LoRA.Enabled }},
		} {
			if !strings.HasPrefix(a.Key, m.table+".") || a.Key == m.table+".enabled" {
				continue
			}
			if !slices.ContainsFunc(pts, func(p Point) bool { return m.on(p.Spec) }) {
				return &ConfigError{File: s.file, Line: s.lineOf("sweep." + a.Key), Key: "sweep." + a.Key,
					Msg: fmt.Sprintf("%s.enabled is false at every point, so this axis changes nothing (the points would give the same numbers); set %s.enabled = true, or sweep it as well", m.table, m.table)}
			}
		}
	}
	return nil
}

// sweepColumns are the keys sweep.json lists as axes, the report's columns:
// the grid's axes, then keys only extra points set, each sorted.
func (s *Spec) sweepColumns() []string {
	var cols []string
	have := map[string]bool{}
	for _, a := range sortedAxes(s.Sweep) {
		cols, have[a.Key] = append(cols, a.Key), true
	}
	var extra []string
	for _, p := range s.SweepPoints {
		for k := range p {
			if !have[k] {
				extra, have[k] = append(extra, k), true
			}
		}
	}
	sort.Strings(extra)
	return append(cols, extra...)
}

// pointError places the error of one sweep point's spec in the sweep file
// (table "sweep" for grid points, "sweep_points" for extra ones): the line
// of the axis or key whose value is at fault when the error names an axis
// key, else the file with the point named, since the point's generated
// document is nowhere a user can see it.
func (s *Spec) pointError(table, name string, axes []Axis, err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return fmt.Errorf("%s: sweep point %s: %w", s.file, name, err)
	}
	what := "grid point "
	if table != "sweep" {
		what = "[[sweep_points]] point "
	}
	if ce.Key == "name" {
		// The point's name is made from its values, not the spec's name
		// key (line 1, valid): say which values make it unusable.
		short := name
		if len(short) > 60 {
			short = short[:57] + "..."
		}
		return &ConfigError{File: s.file, Key: table, Line: s.lineOf(table), Msg: fmt.Sprintf("%s%s: the run directory name made from this point's values (%d characters) is not one memo can use: at most 200 of ASCII letters, digits and . - + = _; shorten its axes' values (a long path or list can go in the spec outside the sweep)", what, short, len(name))}
	}
	out := &ConfigError{File: s.file, Key: ce.Key, Line: s.lineOf(ce.Key), Msg: what + name + ": " + ce.Msg}
	for _, a := range axes {
		if ce.Key == a.Key || strings.HasPrefix(ce.Key, a.Key+".") {
			out.Key, out.Line = table+"."+a.Key, s.lineOf(table+"."+a.Key)
			if !strings.HasPrefix(ce.Msg, ce.Key) {
				out.Msg = what + name + ": " + ce.Key + ": " + ce.Msg
			}
			break
		}
	}
	return out
}

// sweepIndex is sweep.json, which `memo report` and package plots read.
type sweepIndex struct {
	Name   string       `json:"name"`
	Spec   string       `json:"spec"`
	Axes   []string     `json:"axes"`
	Points []indexPoint `json:"points"`
}

type indexPoint struct {
	Name   string         `json:"name"`
	Dir    string         `json:"dir"`
	Spec   string         `json:"spec"`
	Values map[string]any `json:"values"`
	// Reuses is the point whose trained model this one attacks (Point.Reuses).
	Reuses string `json:"reuses_training_of,omitempty"`
}

// SweepIndexFile is the sweep's index of grid points, in its directory;
// it also marks the directory as a sweep's.
const SweepIndexFile = "sweep.json"

// PointSpecSweep is the sweep directory of a point's spec file
// (SWEEP/specs/POINT.toml, beside SWEEP/sweep.json), or "" for any other
// file: the process a sweep starts for a point reads it as a run's spec.
func PointSpecSweep(file string) string {
	specs := filepath.Dir(filepath.Clean(file))
	sweep := filepath.Dir(specs)
	if filepath.Base(specs) != "specs" {
		return ""
	}
	if _, err := os.Stat(filepath.Join(sweep, SweepIndexFile)); err != nil {
		return ""
	}
	return sweep
}

// SweepDir is where a sweep's runs, specs, logs and report go.
func (s *Spec) SweepDir(runsRoot string) string { return filepath.Join(runsRoot, s.Name) }

// PrepareSweep expands the grid and writes sweep.json and one spec file per
// point (specs/<point>.toml) into the sweep directory. Without force, a
// point whose run directory was made from another spec (each point's
// `memo run` would refuse it) refuses the sweep before anything is
// written: a rewritten sweep.json made the finished sweep's report refuse
// every point as made from an older version of the spec.
func PrepareSweep(s *Spec, runsRoot string, force bool) (string, []Point, error) {
	pts, err := s.Expand()
	if err != nil {
		return "", nil, err
	}
	dir := s.SweepDir(runsRoot)
	if !force {
		if err := checkPointsUnchanged(dir, pts); err != nil {
			return "", nil, err
		}
	}
	idx := sweepIndex{Name: s.Name, Spec: s.file}
	idx.Axes = s.sweepColumns()
	for _, p := range pts {
		spec := filepath.Join("specs", p.Name+".toml")
		idx.Points = append(idx.Points, indexPoint{Name: p.Name, Dir: p.Name, Spec: spec, Values: p.Values, Reuses: p.Reuses})
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return "", nil, err
	}
	// sweep.json first: it marks the directory as this sweep's (memo sweep
	// writes only into a new directory or one that holds it), so a prepare
	// cut short is taken up again by the same command.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	b = append(b, '\n')
	if old, err := os.ReadFile(filepath.Join(dir, SweepIndexFile)); err == nil && !bytes.Equal(old, b) {
		// The report is of the old grid: a sweep cut short before it
		// reports again would leave it, a table that reads as finished
		// without the new points. memo report makes it again.
		if err := plots.RemoveReport(dir); err != nil {
			return "", nil, err
		}
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, SweepIndexFile), b); err != nil {
		return "", nil, err
	}
	for _, d := range []string{filepath.Join(dir, "specs"), filepath.Join(dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", nil, err
		}
	}
	current := map[string]bool{}
	for _, p := range pts {
		if err := atomicfile.WriteFile(filepath.Join(dir, "specs", p.Name+".toml"), p.Doc); err != nil {
			return "", nil, err
		}
		current[p.Name+".toml"] = true
	}
	// A point an earlier grid had and this one does not: its spec would
	// be taken for one of this sweep's (memo report --require-all named
	// k=8 unfinished after the grid dropped it). Its run directory stays.
	if ents, err := os.ReadDir(filepath.Join(dir, "specs")); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".toml") && !current[e.Name()] {
				if err := os.Remove(filepath.Join(dir, "specs", e.Name())); err != nil {
					return "", nil, fmt.Errorf("remove the spec of a point no longer in the grid: %w", err)
				}
			}
		}
	}
	return dir, pts, nil
}

// StalePoint says how the run in runDir, a point of a sweep, differs from
// its point's spec in the sweep's specs/ (the spec edited and the sweep
// run again, the point refused as "made from another spec"): "" when it
// does not, or when runDir is no sweep's point. memo report had shown
// such runs as the grid's.
func StalePoint(runDir string) string {
	old, err := os.ReadFile(filepath.Join(runDir, runfiles.ConfigFile))
	if err != nil {
		return ""
	}
	return stalePoint(runDir, old)
}

// stalePoint is StalePoint given the run's config.toml as read (old).
func stalePoint(runDir string, old []byte) string {
	sweep := filepath.Dir(filepath.Clean(runDir))
	if _, err := os.Stat(filepath.Join(sweep, SweepIndexFile)); err != nil {
		return ""
	}
	s, err := Parse(filepath.Join(sweep, "specs", filepath.Base(filepath.Clean(runDir))+".toml"))
	if err != nil {
		return ""
	}
	conf, err := s.TOML()
	if err != nil || bytes.Equal(old, conf) {
		return ""
	}
	if d, err := configDiff(old, conf); err == nil && d != "" {
		return d
	}
	return "its config.toml is not its spec's"
}

// SweepPoints are the names of the grid points of the sweep in dir, as
// its sweep.json lists them, and the directory of each run.
func SweepPoints(dir string) (names, dirs []string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, SweepIndexFile))
	if err != nil {
		return nil, nil, err
	}
	var idx sweepIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, nil, badinput.Errorf("read %s: %v", filepath.Join(dir, SweepIndexFile), err)
	}
	for _, p := range idx.Points {
		d := p.Dir
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		names, dirs = append(names, p.Name), append(dirs, d)
	}
	return names, dirs, nil
}

// checkPointsUnchanged refuses a sweep some of whose points' run
// directories under dir hold a config.toml of another spec.
func checkPointsUnchanged(dir string, pts []Point) error {
	var changed []string
	for _, p := range pts {
		old, err := os.ReadFile(filepath.Join(dir, p.Name, runfiles.ConfigFile))
		if err != nil {
			continue // a new point, or one whose run checks itself
		}
		conf, err := p.Spec.TOML()
		if err != nil {
			return err
		}
		if !bytes.Equal(old, conf) {
			changed = append(changed, p.Name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %d of %d points (%s) were run from another spec; pass --force to move them aside and run them again, or give this sweep another name (nothing was written)",
		ErrSpecChanged, dir, len(changed), len(pts), strings.Join(changed, ", "))
}
