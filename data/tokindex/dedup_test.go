package tokindex

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memo-research/memo/data"
)

// TestDedupTokensNoRepeatLeft (issue 42): a corpus of Opticks and a text
// folder of copies of its chunks (two joined, and one within another's
// text) built with data.dedup_tokens = 16 has, by its own index, no
// window of 16 tokens twice in the training corpus (nor, by a scan, in the
// whole dataset); every document's text
// is its ids; the copies are cut; and each target still counts
// exactly the repetitions asked for. Built without the key, the same
// sources keep the copies.
func TestDedupTokensNoRepeatLeft(t *testing.T) {
	const L = 16
	cfg := data.DefaultConfig()
	cfg.Targets, cfg.Controls, cfg.Validation = 12, 6, 4
	cfg.RepetitionGroups, cfg.Repetitions = []int{1, 2, 4}, 0
	cfg.ChunkTokens, cfg.MinTokens = 64, 24
	cfg.Tokenizer = "bpe:1024"
	cfg.CacheDir = t.TempDir()
	docs, err := buildConfig(t, cfg).Docs("")
	if err != nil {
		t.Fatal(err)
	}
	txt := t.TempDir()
	for k := 0; k+1 < len(docs) && k < 40; k += 2 {
		copied := docs[k].Text + "\n\n" + docs[k+1].Text
		if k%4 == 0 {
			copied = "A note on it: " + docs[k].Text + " So it was written."
		}
		if err := os.WriteFile(filepath.Join(txt, fmt.Sprintf("copy%03d.txt", k)), []byte(copied), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Sources = []string{"opticks", "txt:" + txt}
	cfg.DedupTokens = L
	cfg.DedupWords = 0 // the copies reach the token dedup whole
	ds := buildConfig(t, cfg)
	rep := ds.Report().DedupTokens
	t.Logf("dedup_tokens %+v; rejected %v", rep, ds.Report().RejectedBy)
	if rep == nil || rep.Window != L || rep.Spans == 0 || rep.Tokens < 20*L || rep.Documents < 20 {
		t.Fatalf("report.json dedup_tokens = %+v, want the 20 copies cut", rep)
	}
	if _, err := BuildDataset(ds, PathFor(ds), 0, nil); err != nil {
		t.Fatal(err)
	}
	ix, err := OpenDataset(ds)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	all, err := ds.Docs("")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := data.OpenTokenizer(ds.Dir())
	if err != nil {
		t.Fatal(err)
	}
	windows := 0
	for _, d := range all {
		if tok.Decode(d.IDs) != d.Text {
			t.Errorf("doc %d: text is not its ids decoded", d.ID)
		}
		if d.Split == data.SplitTarget {
			if c, err := ix.Count(d.IDs); err != nil || c.Count != int64(d.Repetitions) {
				t.Errorf("target %d: counts %+v, %v; want %d", d.ID, c, err, d.Repetitions)
			}
		}
		if d.Split != data.SplitTarget && d.Split != data.SplitBackground {
			continue
		}
		for p := 0; p+L <= len(d.IDs); p++ {
			c, err := ix.Count(d.IDs[p : p+L])
			if err != nil {
				t.Fatal(err)
			}
			windows++
			if c.Occurrences != 1 {
				t.Fatalf("doc %d: the window at %d occurs %d times after dedup", d.ID, p, c.Occurrences)
			}
		}
	}
	if windows < 1000 {
		t.Fatalf("only %d windows checked", windows)
	}
	// The index holds the training documents; controls and validation
	// documents were deduplicated too: no window of L tokens twice in the
	// whole dataset, by a scan.
	seen := map[string]int64{}
	for _, d := range all {
		for p := 0; p+L <= len(d.IDs); p++ {
			key := fmt.Sprint(d.IDs[p : p+L])
			if other, ok := seen[key]; ok {
				t.Fatalf("doc %d (%s): the window at %d is also in doc %d", d.ID, d.Split, p, other)
			}
			seen[key] = d.ID
		}
	}
	// Without the key the copies stay: some window occurs twice.
	cfg.DedupTokens = 0
	ds2 := buildConfig(t, cfg)
	if ds2.Report().DedupTokens != nil {
		t.Errorf("report.json has dedup_tokens with the key off")
	}
	if ds2.Report().SplitTokens[data.SplitBackground] <= ds.Report().SplitTokens[data.SplitBackground] {
		t.Errorf("background tokens %d without dedup, %d with: want more without",
			ds2.Report().SplitTokens[data.SplitBackground], ds.Report().SplitTokens[data.SplitBackground])
	}
}
