package data

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// dedupCorpus is n documents of 150 random words; every 7th copies a
// 20-word passage of an earlier one, every 11th a 120-word passage.
func dedupCorpus(n int) (texts []string, long map[int32]bool) {
	r := rand.New(rand.NewSource(7))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%x", r.Int63())
	}
	words := make([][]string, n)
	long = map[int32]bool{}
	for i := range words {
		w := make([]string, 150)
		for k := range w {
			w[k] = vocab[r.Intn(len(vocab))]
		}
		if i > 0 && (i%7 == 0 || i%11 == 0) {
			m := 20
			if i%11 == 0 {
				m, long[int32(i)] = 120, true
			}
			from := words[r.Intn(i)]
			at, to := r.Intn(150-m+1), r.Intn(150-m+1)
			copy(w[to:to+m], from[at:at+m])
		}
		words[i] = w
		texts = append(texts, strings.Join(w, " "))
	}
	return texts, long
}

// dedupMap is dedupWords as it was, with a map of every kept passage: the
// reference for the bounded set while it is exact.
func dedupMap(rows []int32, n int, text func(int32) string) (kept []int32, dups [][2]int32) {
	seen := map[uint64]int32{}
	for _, c := range rows {
		hs := wordWindows(text(c), n)
		with := int32(-1)
		for _, h := range hs {
			if w, ok := seen[h]; ok {
				with = w
				break
			}
		}
		if with >= 0 {
			dups = append(dups, [2]int32{c, with})
			continue
		}
		for _, h := range hs {
			seen[h] = c
		}
		kept = append(kept, c)
	}
	return kept, dups
}

// TestDedupWords: with room for every passage the set answers as the map
// did (the same documents kept, each duplicate named with the same one),
// through its growth from 2^16 slots; full at a small capacity it samples,
// still reports only real duplicates, and finds nearly every document
// that copies a long passage.
func TestDedupWords(t *testing.T) {
	texts, long := dedupCorpus(4000) // 524k passages of 20 words
	text := func(i int32) string { return texts[i] }
	textLen := func(i int32) int { return len(texts[i]) }
	rows := func() []int32 {
		r := make([]int32, len(texts))
		for i := range r {
			r[i] = int32(i)
		}
		return r
	}
	wantKept, wantDups := dedupMap(rows(), 20, text)
	var dups [][2]int32
	kept, sample := dedupWords(rows(), 20, 1<<24, text, textLen, func(c, with int32) { dups = append(dups, [2]int32{c, with}) })
	if sample != 0 || !slices.Equal(kept, wantKept) || !slices.Equal(dups, wantDups) {
		t.Errorf("exact set: sample %d, %d kept and %d duplicates, want the map's %d and %d (equal: %v %v)",
			sample, len(kept), len(dups), len(wantKept), len(wantDups), slices.Equal(kept, wantKept), slices.Equal(dups, wantDups))
	}
	// Batches of one document each (every text "over" the batch size).
	dups = nil
	kept, _ = dedupWords(rows(), 20, 1<<24, text, func(int32) int { return 1 << 30 }, func(c, with int32) { dups = append(dups, [2]int32{c, with}) })
	if !slices.Equal(kept, wantKept) || !slices.Equal(dups, wantDups) {
		t.Errorf("one document a batch: %d kept and %d duplicates, want %d and %d", len(kept), len(dups), len(wantKept), len(wantDups))
	}
	if len(wantDups) < 800 {
		t.Fatalf("the corpus has only %d duplicates", len(wantDups))
	}

	dups = nil
	kept, sample = dedupWords(rows(), 20, 1<<16, text, textLen, func(c, with int32) { dups = append(dups, [2]int32{c, with}) })
	if sample == 0 {
		t.Fatalf("a 2^16-slot set took all %d passages without sampling", 524_000)
	}
	isKept := map[int32]bool{}
	for _, c := range kept {
		isKept[c] = true
	}
	caught := 0
	for _, d := range dups {
		c, with := d[0], d[1]
		if with >= c || !isKept[with] || isKept[c] {
			t.Fatalf("duplicate %d named %d: not an earlier kept document", c, with)
		}
		ws := wordWindows(texts[with], 20)
		if !slices.ContainsFunc(wordWindows(texts[c], 20), func(h uint64) bool { return slices.Contains(ws, h) }) {
			t.Fatalf("duplicate %d shares no passage with %d", c, with)
		}
		if long[c] {
			caught++
		}
	}
	// A 120-word copy is 101 passages: missed with probability
	// (1-2^-sample)^101, under 0.2% at sample 4 (1 in 16).
	t.Logf("sampled 1 in %d: %d duplicates (exact: %d), %d of %d long copies", 1<<sample, len(dups), len(wantDups), caught, len(long))
	if caught < len(long)*9/10 {
		t.Errorf("only %d of %d documents with a 120-word copy caught at 1 in %d", caught, len(long), 1<<sample)
	}
}

// TestPassageSetBounded: the set never outgrows its capacity, finds every
// passage it kept and none it was not given, and confirms fingerprint
// matches through holds.
func TestPassageSetBounded(t *testing.T) {
	const max = 1 << 10
	s := newPassageSet(max, 1<<20)
	r := rand.New(rand.NewSource(1))
	owner := map[uint64]int32{}
	for i := 0; i < 100_000; i++ {
		h, row := r.Uint64(), int32(i/10)
		s.add(h, row)
		owner[h] = row
		if len(s.slots) > max || 2*s.n > len(s.slots) {
			t.Fatalf("after %d: %d slots, %d entries (capacity %d)", i+1, len(s.slots), s.n, max)
		}
	}
	holds := func(row int32, h uint64) bool { w, ok := owner[h]; return ok && w == row }
	found := 0
	for h, row := range owner {
		got := s.find(h, holds)
		if got >= 0 && got != row {
			t.Fatalf("passage of row %d found in row %d", row, got)
		}
		if got >= 0 {
			found++
		}
		if s.sampled(s.fp(h)) && got < 0 {
			t.Fatalf("sampled passage of row %d not found", row)
		}
	}
	if s.sample < 7 || found == 0 || found > max/2 {
		t.Errorf("sample %d (1 in %d), %d of 100000 found", s.sample, 1<<s.sample, found)
	}
	for i := 0; i < 1000; i++ {
		if got := s.find(r.Uint64(), holds); got >= 0 {
			t.Fatalf("a passage never added found in row %d", got)
		}
	}
	// A fingerprint match that holds denies is not a hit.
	for h := range owner {
		if s.sampled(s.fp(h)) {
			if got := s.find(h, func(int32, uint64) bool { return false }); got >= 0 {
				t.Fatalf("unconfirmed match returned row %d", got)
			}
			break
		}
	}
}
