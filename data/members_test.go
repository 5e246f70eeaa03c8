package data

import (
	"path/filepath"
	"testing"
)

// TestWithMembers: a reference model's view trains on the background and
// exactly the pool documents it names, each its count of times, through
// both TrainRows and Stream; a document outside the pool is refused.
func TestWithMembers(t *testing.T) {
	cfg := testConfig(t)
	cfg.Targets, cfg.Controls, cfg.Validation = 6, 6, 2
	cfg.Tokenizer = "bpe:600"
	cfg.Background, cfg.Repetitions = 10, 3
	built := buildTest(t, cfg)
	ds, err := Open(filepath.Dir(built.Dir()))
	if err != nil {
		t.Fatal(err)
	}
	targets, _ := ds.Docs(SplitTarget)
	controls, _ := ds.Docs(SplitControl)
	valid, _ := ds.Docs(SplitValidation)
	// Half of each: targets 0..2 twice, controls 0..2 once.
	members := map[int64]int32{}
	for i := 0; i < 3; i++ {
		members[targets[i].ID] = 2
		members[controls[i].ID] = 1
	}
	view, err := ds.WithMembers(members)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := view.trainDocs()
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int{}
	background := 0
	for _, d := range docs {
		if d.Split == SplitBackground {
			background++
			continue
		}
		got[d.ID] = d.Repetitions
	}
	if background != cfg.Background {
		t.Errorf("background documents %d, want %d", background, cfg.Background)
	}
	if len(got) != len(members) {
		t.Errorf("pool documents trained on: %d, want %d", len(got), len(members))
	}
	for id, reps := range members {
		if got[id] != int(reps) {
			t.Errorf("doc %d: %d repetitions, want %d", id, got[id], reps)
		}
	}
	checkStream(t, view, "members", []int{16, 64})
	// The view leaves the dataset's own stream alone.
	own, err := ds.trainDocs()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range own {
		if d.Split == SplitControl {
			t.Fatalf("the dataset's own stream holds control %d", d.ID)
		}
	}
	if _, err := ds.WithMembers(map[int64]int32{valid[0].ID: 1}); err == nil {
		t.Error("a validation document was accepted as a member")
	}
	if _, err := ds.WithMembers(map[int64]int32{targets[0].ID: 0}); err == nil {
		t.Error("zero repetitions were accepted")
	}
}
