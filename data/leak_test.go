package data

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBackgroundLeakRejected: background text is trained on, so a document
// that shares a 50-token window with a control (which would then no longer
// be a non-member) or with a target (seen more often than its repetition
// count) must not become background. Here every target and control
// paragraph is also quoted inside a background-source document; those are
// rejected by name, clean ones take their place, and no background document
// shares a window with a member (checked by brute force).
func TestBackgroundLeakRejected(t *testing.T) {
	var paras []string
	for _, p := range strings.Split(opticksText(t), "\n\n") {
		if len(p) > 700 {
			paras = append(paras, p)
		}
	}
	const members, clean = 10, 12
	if len(paras) < 2*members+clean {
		t.Fatalf("only %d long Opticks paragraphs", len(paras))
	}
	dir := t.TempDir()
	pool, bg := filepath.Join(dir, "pool"), filepath.Join(dir, "bg")
	for i := 0; i < members; i++ {
		writeFile(t, filepath.Join(pool, fmt.Sprintf("m%02d.txt", i)), paras[i])
		// another paragraph, then member i quoted whole
		writeFile(t, filepath.Join(bg, fmt.Sprintf("quotes-m%02d.txt", i)), paras[members+i]+"\n\n"+paras[i])
	}
	for i := 0; i < clean; i++ {
		writeFile(t, filepath.Join(bg, fmt.Sprintf("clean%02d.txt", i)), paras[2*members+i])
	}

	cases := []struct {
		name       string
		background int
		want       int    // background documents
		err        string // "" = builds
	}{
		{"all clean ones", -1, clean, ""},
		{"leaks replaced by clean ones", 5, 5, ""},
		{"every clean one", clean, clean, ""},
		{"more than the clean ones", clean + 1, 0, "share no 50-token window with a target or control"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Sources = []string{"txt:" + pool, "txt:" + bg}
			cfg.TargetSources = []string{"txt:" + pool}
			cfg.Tokenizer = "bpe:512"
			cfg.ChunkTokens, cfg.MinTokens, cfg.DedupWords = 0, 50, 0
			cfg.Targets, cfg.Controls, cfg.Validation, cfg.Background = members/2, members/2, 0, c.background
			if c.err != "" {
				err := Build(context.Background(), cfg, t.TempDir())
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "data.background") {
					t.Fatalf("error %v, want one naming data.background and containing %q", err, c.err)
				}
				return
			}
			ds := buildTest(t, cfg)
			rep := ds.Report()
			background := docIDs(t, ds, SplitBackground)
			if len(background) != c.want {
				t.Errorf("%d background documents, want %d", len(background), c.want)
			}
			for _, d := range background {
				if !strings.HasPrefix(d.Title, "clean") {
					t.Errorf("background %q quotes a member", d.Title)
				}
			}
			memberDocs := docIDs(t, ds, SplitTarget)
			for id, d := range docIDs(t, ds, SplitControl) {
				memberDocs[id] = d
			}
			if len(memberDocs) != members {
				t.Fatalf("%d targets and controls, want %d", len(memberDocs), members)
			}
			for _, b := range background {
				for _, m := range memberDocs {
					if shareWindow(b.IDs, m.IDs, OverlapTokens) {
						t.Errorf("background %q shares a %d-token window with %s %q", b.Title, OverlapTokens, m.Split, m.Title)
					}
				}
			}
			// Each quoting document examined is rejected, naming the member
			// it quotes; with background = -1 all of them are.
			byTitle := map[string]Doc{}
			for _, m := range memberDocs {
				byTitle[m.Title] = m
			}
			leaks := 0
			for _, r := range rep.Rejected {
				quoted, ok := strings.CutPrefix(r.Title, "quotes-")
				if !ok {
					t.Errorf("unexpected rejection %+v", r)
					continue
				}
				leaks++
				m := byTitle[quoted]
				want := fmt.Sprintf("would-be background shares a %d-token window with %s %q", OverlapTokens, m.Split, quoted)
				if r.Source != "txt:"+bg || r.Reason != want {
					t.Errorf("rejection %+v, want source txt:%s and reason %q", r, bg, want)
				}
			}
			if got := rep.RejectedBy["background overlaps a target"] + rep.RejectedBy["background overlaps a control"]; got != leaks || leaks == 0 {
				t.Errorf("rejected by reason %v, %d leaking documents named", rep.RejectedBy, leaks)
			}
			if c.background < 0 && (rep.RejectedBy["background overlaps a target"] != members/2 || rep.RejectedBy["background overlaps a control"] != members/2) {
				t.Errorf("rejected by reason %v, want %d of each kind", rep.RejectedBy, members/2)
			}
			if got := len(background) + leaks + rep.Unused; got != members+clean {
				t.Errorf("background %d + rejected %d + unused %d = %d, want the %d background-source documents", len(background), leaks, rep.Unused, got, members+clean)
			}
		})
	}
}

// TestWindowHashes: the rolled hash of each window is the polynomial
// computed from scratch, equal windows hash equal, fn can stop the walk,
// and ids shorter than a window give none.
func TestWindowHashes(t *testing.T) {
	ids := []int32{0, 1, -1, 255, 256, 65535, 1 << 20, -(1 << 30), 50256, 7, 0, 1, -1, 255}
	direct := func(w []int32) uint64 {
		var h uint64
		for _, id := range w {
			h = h*0x9e3779b97f4a7c15 + mixID(id)
		}
		return h
	}
	for _, n := range []int{1, 3, 4, len(ids)} {
		var got []uint64
		windowHashes(ids, n, func(i int, h uint64) bool {
			if i != len(got) {
				t.Fatalf("n=%d: window %d given as %d", n, len(got), i)
			}
			got = append(got, h)
			return true
		})
		if len(got) != len(ids)-n+1 {
			t.Fatalf("n=%d: %d windows, want %d", n, len(got), len(ids)-n+1)
		}
		for i, h := range got {
			if want := direct(ids[i : i+n]); h != want {
				t.Errorf("n=%d window %d: %x, want %x", n, i, h, want)
			}
		}
	}
	// ids[10:14] repeats ids[0:4].
	var first, again uint64
	windowHashes(ids, 4, func(i int, h uint64) bool {
		switch i {
		case 0:
			first = h
		case 10:
			again = h
		}
		return true
	})
	if first != again {
		t.Errorf("equal windows hash %x and %x", first, again)
	}
	calls := 0
	windowHashes(ids, 2, func(int, uint64) bool { calls++; return calls < 3 })
	if calls != 3 {
		t.Errorf("fn returned false at the 3rd window, called %d times", calls)
	}
	windowHashes(ids, len(ids)+1, func(int, uint64) bool { t.Error("a window longer than the ids"); return true })
}

// TestWindowIndexShared: the member found is the last one added that holds
// the window (as the map it replaced answered), a document sharing none
// finds none, and windows split across members do not count.
func TestWindowIndexShared(t *testing.T) {
	seq := func(from, n int) []int32 {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(from + i)
		}
		return ids
	}
	const a, b, c = 0, 1, 2
	members := [][]int32{
		a: seq(0, 120),
		b: seq(1000, 80),
		c: append(seq(1000, 60), seq(0, 60)...), // b's start, then a's
	}
	tokens := func(m int32) []int32 { return members[m] }
	size := func(m int32) int { return len(members[m]) }
	x := newWindowIndex([]int32{a, b, c}, size, tokens)
	tests := []struct {
		name string
		ids  []int32
		want int32
	}{
		{"a's middle", seq(30, 60), a},
		{"b's and c's start: c, added last", seq(1000, OverlapTokens), c},
		{"a's start, also in c: c", seq(0, OverlapTokens+5), c},
		{"b's end only", seq(1020, 60), b},
		{"one token short of a window of a", seq(70, OverlapTokens-1), -1},
		{"across c's seam, which no member holds whole in order", append(seq(1030, 30), seq(500, 30)...), -1},
		{"nothing shared", seq(5000, 200), -1},
	}
	for _, tt := range tests {
		if got := x.shared(tt.ids, tokens); got != tt.want {
			t.Errorf("%s: found %v, want %v", tt.name, got, tt.want)
		}
		members = append(members[:3], tt.ids) // a document to check, key 3
		if got := x.sharedAll([]int32{3}, tokens)[0]; got != tt.want {
			t.Errorf("%s: sharedAll found %v, want %v", tt.name, got, tt.want)
		}
	}
	// Many documents at once, more than a batch, given out of order and
	// with some rows left out: the hits by row, as sharedAll found them.
	members = members[:3]
	var docs []int32
	want := map[int32]int32{}
	for r := 0; r < 2*sharedBatch+10; r++ {
		tt := tests[r%len(tests)]
		members = append(members, tt.ids)
		row := int32(len(members) - 1)
		if r%5 == 4 {
			continue // a row that is not a document to check
		}
		docs = append(docs, row)
		if tt.want >= 0 {
			want[row] = tt.want
		}
	}
	slices.Reverse(docs)
	if got := x.sharedInRowOrder(docs, len(members), tokens); !maps.Equal(got, want) {
		t.Errorf("sharedInRowOrder: %d hits, want %d", len(got), len(want))
	}
}
