package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
)

// naiveCounter counts a window in a small corpus of documents, each
// repeated reps times, scanning every position of every document.
func naiveCounter(docs [][]int32, reps []int64) CountWindow {
	return func(q []int32) (int64, error) {
		var n int64
		for d, ids := range docs {
			for i := 0; i+len(q) <= len(ids); i++ {
				match := true
				for k := range q {
					match = match && ids[i+k] == q[k]
				}
				if match {
					n += reps[d]
				}
			}
		}
		return n, nil
	}
}

// TestRunCounted: with a counter, eval writes each document's window and
// suffix counts to corpus_counts.parquet and buckets the attacked members
// by count in summary.json; scores.parquet is the same as without.
func TestRunCounted(t *testing.T) {
	dir := t.TempDir()
	comps := crafted()
	comps[0].Prefix = []int32{9}
	if err := runfiles.WriteCompletions(filepath.Join(dir, "completions.arrow"), comps, nil); err != nil {
		t.Fatal(err)
	}
	corpus := [][]int32{{9, 1, 2, 3, 4}, {0, 1, 2, 3, 4, 5}, {5, 6, 7}}
	count := naiveCounter(corpus, []int64{4, 4, 1})
	gf := loss.Config{Strategy: "hash-table", K: 4, H: 13}
	scores, summary := filepath.Join(dir, "scores.parquet"), filepath.Join(dir, "summary.json")
	counted := CountedCorpus{Dataset: "/runs/a/data", Tokenizer: "bpe:300", Digest: "ab12"}
	sum, err := RunCounted(DefaultConfig(), dir, gf, scores, summary, &Counter{Count: count, Corpus: counted})
	if err != nil {
		t.Fatal(err)
	}
	// summary.json names the corpus counted in, read back from the file.
	var written Summary
	if raw, err := os.ReadFile(summary); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(raw, &written); err != nil {
		t.Fatal(err)
	}
	if written.CountedCorpus == nil || *written.CountedCorpus != counted {
		t.Errorf("summary.json counted_corpus %+v, want %+v", written.CountedCorpus, counted)
	}
	rows, err := CorpusCounts.ReadParquet(filepath.Join(dir, "corpus_counts.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64][2]int64{1: {4, 8}, 2: {8, 8}, 3: {1, 1}, 4: {-1, -1}, 5: {8, 8}, 6: {8, 8}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		if w := want[r.DocID]; r.WindowCount != w[0] || r.SuffixCount != w[1] {
			t.Errorf("doc %d: window %d, suffix %d; want %v", r.DocID, r.WindowCount, r.SuffixCount, w)
		}
	}
	// Doc 1 (count 4, extracted) is alone in [4, 7]; doc 2 (8, not) in
	// [8, 15]; doc 3 (1, not) in [1, 1]; doc 4 was not attacked.
	got := sum.ByCorpusCount
	if len(got) != 3 || got[0].Lo != 1 || got[1].Lo != 4 || got[1].Hi != 7 || got[2].Lo != 8 || got[2].Hi != 15 {
		t.Fatalf("buckets %+v", got)
	}
	if got[1].Members != 1 || got[1].ExactMatch != 1 || got[2].ExactMatch != 0 || got[0].ExactMatch != 0 {
		t.Errorf("exact match by bucket %+v", got)
	}
	scored, err := ReadScores(scores)
	if err != nil {
		t.Fatal(err)
	}
	var controls []float64
	for _, s := range scored {
		if s.Split == "control" {
			controls = append(controls, -s.Loss)
		}
	}
	if a := AUC([]float64{-scored[0].Loss}, controls); !near(float64(got[1].LossAUC), a) {
		t.Errorf("bucket [4, 7] loss AUC %v, want %v", got[1].LossAUC, a)
	}
	// Each bucket carries its Wilson interval: 1 of 1 and 0 of 1.
	for i, k := range []int{0, 1, 0} {
		lo, hi := WilsonCI(k, 1)
		if ci := got[i].ExactMatchWilsonCI; ci == nil || ci[0] != Num(lo) || ci[1] != Num(hi) {
			t.Errorf("bucket %d: interval %v, want [%v, %v]", i, ci, lo, hi)
		}
	}
	read, err := ReadSummary(summary)
	if err != nil || len(read.ByCorpusCount) != 3 || read.ByCorpusCount[1].ExactMatchWilsonCI == nil {
		t.Fatalf("summary.json by_corpus_count: %v, %v", read, err)
	}
}

func TestCountBucketOf(t *testing.T) {
	for _, tc := range []struct{ n, lo, hi int64 }{{0, 0, 0}, {1, 1, 1}, {2, 2, 3}, {3, 2, 3}, {4, 4, 7}, {100, 64, 127}, {128, 128, 255}} {
		if lo, hi := countBucketOf(tc.n); lo != tc.lo || hi != tc.hi {
			t.Errorf("bucket of %d: [%d, %d], want [%d, %d]", tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}
