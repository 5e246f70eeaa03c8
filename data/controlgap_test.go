package data

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// chunkOf splits a chunk title "file.txt #3" into its source document and
// chunk number (1-based).
func chunkOf(t *testing.T, title string) (string, int) {
	t.Helper()
	doc, k, ok := strings.Cut(title, " #")
	if !ok {
		return title, 1
	}
	n, err := strconv.Atoi(k)
	if err != nil {
		t.Fatalf("title %q", title)
	}
	return doc, n
}

// TestControlGap: with data.control_gap = N no control lies within N
// chunks of a target cut from the same source document, with -1 no control
// comes from a document holding a target; the refused candidates are in
// report.json under "control near a target", member_separation says which
// rule held, and a single-document corpus cannot be split by document (a
// clear error naming the key).
func TestControlGap(t *testing.T) {
	dir := t.TempDir()
	paras := strings.Split(opticksText(t), "\n\n")
	var long []string
	for _, p := range paras {
		if len(p) > 1000 {
			long = append(long, p)
		}
	}
	for f := 0; f < 16; f++ { // one paragraph a document: about 6 to 10 chunks each
		writeFile(t, filepath.Join(dir, fmt.Sprintf("doc%02d.txt", f)), long[f])
	}
	base := testConfig(t)
	base.Sources, base.Tokenizer = []string{"txt:" + dir}, "bpe:400"
	base.ChunkTokens, base.MinTokens, base.DedupWords = 64, 32, 0
	base.Targets, base.Controls, base.Validation = 8, 8, 0
	for _, gap := range []int{0, 2, -1} {
		cfg := base
		cfg.ControlGap = gap
		ds := buildTest(t, cfg)
		rep := ds.Report()
		if rep.MemberSeparation != cfg.MemberSeparation() || !strings.HasPrefix(rep.MemberSeparation, map[int]string{0: "none", 2: "gap: a control is more than 2 chunks", -1: "by source document"}[gap]) {
			t.Errorf("gap %d: member_separation %q", gap, rep.MemberSeparation)
		}
		docs, err := ds.Docs("")
		if err != nil {
			t.Fatal(err)
		}
		targets := map[string][]int{}
		for _, d := range docs {
			if d.Split == SplitTarget {
				doc, k := chunkOf(t, d.Title)
				targets[doc] = append(targets[doc], k)
			}
		}
		near := 0 // controls within 2 chunks of a target of their document
		for _, d := range docs {
			if d.Split != SplitControl {
				continue
			}
			doc, k := chunkOf(t, d.Title)
			for _, tk := range targets[doc] {
				if gap < 0 {
					t.Errorf("gap -1: control %q comes from a document holding target chunk %d", d.Title, tk)
				}
				if tk-k <= 2 && k-tk <= 2 {
					near++
					if gap > 0 {
						t.Errorf("gap %d: control %q is within %d chunks of target chunk %d", gap, d.Title, gap, tk)
					}
				}
			}
		}
		refused := rep.RejectedBy["control near a target"]
		switch {
		case gap == 0 && (refused != 0 || near == 0):
			t.Errorf("gap 0: %d refused, %d controls next to a target; want none refused and some close (the default splits chunks independently)", refused, near)
		case gap != 0 && refused == 0:
			t.Errorf("gap %d: no candidate refused as near a target", gap)
		}
	}

	one := testConfig(t)
	one.ControlGap = -1
	err := Build(context.Background(), one, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "data.control_gap = -1") {
		t.Errorf("opticks (one source document) split by document: %v, want an error naming data.control_gap", err)
	}
}
