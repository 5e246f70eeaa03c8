// Command auditset writes the labelled sets of docs/ATTACKS.md's worked
// example of memo audit from a run memo trained (example.toml here):
//
//	unshifted.jsonl  the run's members (targets) against its held-out
//	                 controls, drawn alike from every source: no shift
//	shifted.jsonl    the members of one source against the controls of
//	                 another: true labels, but a distribution shift a
//	                 word count sees
//	scale.jsonl      with -scale N, N texts of 1-2 KB (members: targets
//	                 and background, trained on; non-members: controls
//	                 and validation), for timing an audit
//
// Every file is WikiMIA's form, {"input": text, "label": 1 or 0}.
//
//	go run ./scripts/auditset -run runs/audit-example -out sets [-scale 10000]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/data"
)

func main() {
	run := flag.String("run", "", "the trained run `DIR`")
	out := flag.String("out", "", "a new output `DIR`")
	memberSource := flag.String("member-source", "sotu", "the shifted set's members' `SOURCE`")
	nonmemberSource := flag.String("nonmember-source", "kjv", "the shifted set's non-members' `SOURCE`")
	scale := flag.Int("scale", 0, "also write scale.jsonl with `N` texts of 1-2 KB")
	seed := flag.Uint64("seed", 1, "seeds scale.jsonl's draw")
	flag.Parse()
	if err := write(*run, *out, *memberSource, *nonmemberSource, *scale, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "auditset:", err)
		os.Exit(2)
	}
}

type labelledText struct {
	Input string `json:"input"`
	Label int    `json:"label"`
}

func write(run, out, memberSource, nonmemberSource string, scale int, seed uint64) error {
	if run == "" || out == "" {
		return fmt.Errorf("give -run DIR and -out DIR")
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s exists: name a new directory", out)
	}
	ds, err := data.Open(run)
	if err != nil {
		return err
	}
	docs, err := ds.Docs("")
	if err != nil {
		return err
	}
	var unshifted, shifted, members, nonmembers []labelledText
	for _, d := range docs {
		switch d.Split {
		case data.SplitTarget:
			unshifted = append(unshifted, labelledText{d.Text, 1})
			if d.Source == memberSource {
				shifted = append(shifted, labelledText{d.Text, 1})
			}
		case data.SplitControl:
			unshifted = append(unshifted, labelledText{d.Text, 0})
			if d.Source == nonmemberSource {
				shifted = append(shifted, labelledText{d.Text, 0})
			}
		}
		if n := len(d.Text); n >= 1000 && n <= 2000 {
			if d.Split == data.SplitTarget || d.Split == data.SplitBackground {
				members = append(members, labelledText{d.Text, 1})
			} else {
				nonmembers = append(nonmembers, labelledText{d.Text, 0})
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	files := map[string][]labelledText{"unshifted.jsonl": unshifted, "shifted.jsonl": shifted}
	if scale > 0 {
		// Half members, half non-members where there are enough of each;
		// members (the background) make up the rest.
		rng := rand.New(rand.NewPCG(seed, 2))
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		rng.Shuffle(len(nonmembers), func(i, j int) { nonmembers[i], nonmembers[j] = nonmembers[j], nonmembers[i] })
		nn := min(len(nonmembers), scale/2)
		if len(members)+nn < scale {
			return fmt.Errorf("the run has %d texts of 1-2 KB, not %d", len(members)+len(nonmembers), scale)
		}
		set := append(nonmembers[:nn:nn], members[:scale-nn]...)
		rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
		files["scale.jsonl"] = set
	}
	for name, rows := range files {
		var b strings.Builder
		for _, r := range rows {
			line, err := json.Marshal(r)
			if err != nil {
				return err
			}
			b.Write(append(line, '\n'))
		}
		if err := os.WriteFile(filepath.Join(out, name), []byte(b.String()), 0o644); err != nil {
			return err
		}
		slog.Info("wrote", "file", filepath.Join(out, name), "texts", len(rows))
	}
	return nil
}
