package experiments

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/pelletier/go-toml/v2"
)

// Point is one run of a sweep.
type Point struct {
	Name   string         // e.g. "k=4_preset=tiny"
	Values map[string]any // axis key -> value
	Spec   *Spec          // the resolved spec of this run (no sweep, Name = point name)
	Doc    []byte         // the spec file `memo run` gets for this point
	// Reuses names the earlier point that trains this point's model when
	// the two differ only in extract, eval and plots keys (same
	// TrainingKey): this point links that run's data and checkpoints and
	// only attacks. Empty for a point that trains.
	Reuses string
}

// Expand turns a sweep spec into its grid of runs, checking that every
// value fits its key: a bad value fails before anything runs.
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
	for _, vals := range grid(axes) {
		name := pointName(labels, vals)
		if seen[name] {
			return nil, &ConfigError{File: s.file, Line: keyLine(s.doc, "sweep"), Key: "sweep", Msg: fmt.Sprintf("two grid points are both named %q: an axis repeats a value", name)}
		}
		seen[name] = true
		doc := deepCopy(s.raw).(map[string]any)
		delete(doc, "sweep")
		doc["name"] = name
		values := map[string]any{}
		for i, a := range axes {
			if err := setPath(doc, a.Key, vals[i]); err != nil {
				return nil, &ConfigError{File: s.file, Line: keyLine(s.doc, "sweep."+a.Key), Key: "sweep." + a.Key, Msg: err.Error()}
			}
			values[a.Key] = vals[i]
		}
		b, err := toml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: encode sweep point %s: %w", s.file, name, err)
		}
		ps, err := ParseBytes(s.file+" [sweep point "+name+"]", b)
		if err != nil {
			return nil, s.pointError(name, axes, err)
		}
		key, err := ps.TrainingKey()
		if err != nil {
			return nil, err
		}
		reuses := trainer[key]
		if reuses == "" {
			trainer[key] = name
		}
		pts = append(pts, Point{Name: name, Values: values, Spec: ps, Doc: b, Reuses: reuses})
	}
	return pts, nil
}

// pointError places the error of one grid point's spec in the sweep file:
// the line of the axis whose value is at fault when the error names an axis
// key, else the file with the point named, since the point's generated
// document is nowhere a user can see it.
func (s *Spec) pointError(name string, axes []Axis, err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) {
		return fmt.Errorf("%s: sweep point %s: %w", s.file, name, err)
	}
	out := &ConfigError{File: s.file, Key: ce.Key, Msg: "grid point " + name + ": " + ce.Msg}
	for _, a := range axes {
		if ce.Key == a.Key || strings.HasPrefix(ce.Key, a.Key+".") {
			out.Key, out.Line = "sweep."+a.Key, keyLine(s.doc, "sweep."+a.Key)
			if !strings.HasPrefix(ce.Msg, ce.Key) {
				out.Msg = "grid point " + name + ": " + ce.Key + ": " + ce.Msg
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

// SweepDir is where a sweep's runs, specs, logs and report go.
func (s *Spec) SweepDir(runsRoot string) string { return filepath.Join(runsRoot, s.Name) }

// PrepareSweep expands the grid and writes sweep.json and one spec file per
// point (specs/<point>.toml) into the sweep directory.
func PrepareSweep(s *Spec, runsRoot string) (string, []Point, error) {
	pts, err := s.Expand()
	if err != nil {
		return "", nil, err
	}
	dir := s.SweepDir(runsRoot)
	for _, d := range []string{filepath.Join(dir, "specs"), filepath.Join(dir, "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", nil, err
		}
	}
	idx := sweepIndex{Name: s.Name, Spec: s.file}
	for _, a := range sortedAxes(s.Sweep) {
		idx.Axes = append(idx.Axes, a.Key)
	}
	for _, p := range pts {
		spec := filepath.Join("specs", p.Name+".toml")
		if err := atomicfile.WriteFile(filepath.Join(dir, spec), p.Doc); err != nil {
			return "", nil, err
		}
		idx.Points = append(idx.Points, indexPoint{Name: p.Name, Dir: p.Name, Spec: spec, Values: p.Values, Reuses: p.Reuses})
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return "", nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "sweep.json"), append(b, '\n')); err != nil {
		return "", nil, err
	}
	return dir, pts, nil
}
