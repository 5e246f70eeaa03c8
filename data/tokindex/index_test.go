package tokindex

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
)

type doc struct {
	id   int64
	reps int32
	ids  []int32
}

func scanOf(docs []doc) Scan {
	return func(emit func(int64, int32, []int32) error) error {
		for _, d := range docs {
			if err := emit(d.id, d.reps, d.ids); err != nil {
				return err
			}
		}
		return nil
	}
}

// naive counts q in each document (never across two), weighted by
// repetitions, and the occurrences.
func naive(docs []doc, q []int32) (Count, []Occurrence) {
	var c Count
	var occ []Occurrence
	for _, d := range docs {
		for i := 0; i+len(q) <= len(d.ids); i++ {
			match := true
			for k := range q {
				if d.ids[i+k] != q[k] {
					match = false
					break
				}
			}
			if match {
				c.Count += int64(d.reps)
				c.Occurrences++
				occ = append(occ, Occurrence{DocID: d.id, Offset: int64(i), Reps: d.reps})
			}
		}
	}
	return c, occ
}

// corpus generates documents over a small vocabulary with planted
// repeats: a few phrases copied into many documents, some at a document's
// start or end.
func corpus(rng *rand.Rand, ndocs, vocab int, base int32, reps []int32) []doc {
	phrases := make([][]int32, 4)
	for i := range phrases {
		for k := 0; k < 3+rng.IntN(8); k++ {
			phrases[i] = append(phrases[i], base+int32(rng.IntN(vocab)))
		}
	}
	var docs []doc
	for d := 0; d < ndocs; d++ {
		var ids []int32
		n := rng.IntN(40)
		for len(ids) < n {
			if rng.IntN(4) == 0 {
				ids = append(ids, phrases[rng.IntN(len(phrases))]...)
			} else {
				ids = append(ids, base+int32(rng.IntN(vocab)))
			}
		}
		docs = append(docs, doc{id: int64(1000 + 3*d), reps: reps[rng.IntN(len(reps))], ids: ids})
	}
	return docs
}

func build(t *testing.T, docs []doc, opt Options) *Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.idx")
	if _, err := Build(path, opt, scanOf(docs)); err != nil {
		t.Fatal(err)
	}
	ix, err := Open(path, opt.Identity)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// TestCountsEqualNaiveScan: every window of the corpus, windows across
// document boundaries, random windows and the stream's first and last
// tokens count as a scan of the documents counts them.
func TestCountsEqualNaiveScan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		vocab     int
		base      int32
		reps      []int32
		partition int
	}{
		{"small vocab, one group", 5, 0, []int32{1}, 0},
		{"repetition groups, tiny partitions", 6, 0, []int32{1, 2, 8, 50}, 7},
		{"wide ids", 70000, 65530, []int32{1, 3}, 0},
		{"max window under a sort key", 6, 0, []int32{1, 2}, -3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.vocab)))
			vocab := tc.vocab
			if tc.base > 0 {
				vocab = 12 // ids near the uint16 separator, in a 4-byte stream
			}
			docs := corpus(rng, 60, vocab, tc.base, tc.reps)
			docs = append(docs, doc{id: 1, reps: 1}) // an empty document
			opt := Options{Identity: Identity{"tok", "d"}, Vocab: tc.vocab, Partition: tc.partition}
			maxLen := 12
			if tc.partition < 0 {
				opt.Partition, opt.MaxWindow, maxLen = 0, -tc.partition, -tc.partition
			}
			ix := build(t, docs, opt)
			if tc.partition > 0 && ix.Header().Groups == nil {
				t.Fatal("no groups")
			}
			check := func(q []int32) {
				t.Helper()
				want, wantOcc := naive(docs, q)
				got, err := ix.Count(q)
				if err != nil {
					t.Fatalf("count %v: %v", q, err)
				}
				if got != want {
					t.Fatalf("count %v = %+v, naive scan %+v", q, got, want)
				}
				occ, c, err := ix.Locate(q, 0)
				if err != nil || c != want || len(occ) != len(wantOcc) {
					t.Fatalf("locate %v: %d occurrences, %+v, %v; want %d", q, len(occ), c, err, len(wantOcc))
				}
				for i := range occ {
					if occ[i] != wantOcc[i] {
						t.Fatalf("locate %v [%d] = %+v, want %+v", q, i, occ[i], wantOcc[i])
					}
				}
			}
			var total int
			for _, d := range docs {
				total += len(d.ids)
				for n := 1; n <= maxLen; n++ {
					for i := 0; i+n <= len(d.ids); i++ {
						check(d.ids[i : i+n])
					}
				}
			}
			// Across boundaries: the end of each document and the start of
			// the next, which the stream holds side by side.
			for k := 0; k+1 < len(docs); k++ {
				a, b := docs[k].ids, docs[k+1].ids
				for i := 1; i <= min(3, len(a)); i++ {
					for j := 1; j <= min(3, len(b)) && i+j <= maxLen; j++ {
						check(append(append([]int32{}, a[len(a)-i:]...), b[:j]...))
					}
				}
			}
			for i := 0; i < 300; i++ {
				q := make([]int32, 1+rng.IntN(min(6, maxLen)))
				for k := range q {
					q[k] = tc.base + int32(rng.IntN(vocab))
				}
				check(q)
			}
			// The stream's first and last tokens.
			first, last := docs[0].ids, docs[len(docs)-2].ids
			check(first[:1])
			check(first[:min(len(first), maxLen)])
			check(last[len(last)-1:])
			check(last[max(0, len(last)-maxLen):])
			if h := ix.Header(); h.Tokens != int64(total) || h.Docs != int64(len(docs)) {
				t.Fatalf("header: %d tokens, %d docs; want %d, %d", h.Tokens, h.Docs, total, len(docs))
			}
		})
	}
}

// TestPlantedBoundaryWindow: a window present only across two documents
// counts 0, and the same window inside a document counts once.
func TestPlantedBoundaryWindow(t *testing.T) {
	docs := []doc{{1, 1, []int32{0, 1, 2, 7}}, {2, 1, []int32{8, 9, 3}}, {3, 4, []int32{4, 7, 8, 5}}}
	ix := build(t, docs, Options{Vocab: 10})
	for _, tc := range []struct {
		q    []int32
		want Count
	}{
		{[]int32{7, 8}, Count{4, 1}}, // only doc 3 (4 repetitions); docs 1|2 hold it across the boundary
		{[]int32{2, 7, 8}, Count{0, 0}},
		{[]int32{0}, Count{1, 1}},          // the stream's first token
		{[]int32{5}, Count{4, 1}},          // its last
		{[]int32{3, 4}, Count{0, 0}},       // across 2|3
		{[]int32{0, 1, 2, 7}, Count{1, 1}}, // a whole document
	} {
		got, err := ix.Count(tc.q)
		if err != nil || got != tc.want {
			t.Errorf("count %v = %+v, %v; want %+v", tc.q, got, err, tc.want)
		}
	}
}

// TestBadInput: a truncated or altered file, another tokenizer or build,
// and windows the index cannot count are bad input, never a count.
func TestBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	docs := corpus(rng, 30, 5, 0, []int32{1, 4})
	id := Identity{Tokenizer: "gpt2:abc", Digest: "0123456789abcdef"}
	path := filepath.Join(t.TempDir(), "tokens.idx")
	if _, err := Build(path, Options{Identity: id, Vocab: 5, MaxWindow: 16}, scanOf(docs)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	variant := func(name string, f func([]byte) []byte) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, f(append([]byte{}, raw...)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flip := func(at int) func([]byte) []byte {
		return func(b []byte) []byte { b[at] ^= 0x10; return b }
	}
	for _, tc := range []struct {
		name string
		path string
		want Identity
	}{
		{"truncated by a byte", variant("t1", func(b []byte) []byte { return b[:len(b)-1] }), id},
		{"truncated to its body", variant("t2", func(b []byte) []byte { return b[:len(b)/2] }), id},
		{"truncated inside the prefix", variant("t3", func(b []byte) []byte { return b[:100] }), id},
		{"empty", variant("t4", func(b []byte) []byte { return nil }), id},
		{"a stream byte altered", variant("c1", flip(bodyOff+3)), id},
		{"a suffix array byte altered", variant("c2", flip(len(raw)-400)), id},
		{"a header byte altered", variant("c3", flip(len(raw)-5)), id},
		{"the magic altered", variant("c4", flip(0)), id},
		{"another tokenizer", path, Identity{Tokenizer: "bpe:4096:def", Digest: id.Digest}},
		{"another build", path, Identity{Tokenizer: id.Tokenizer, Digest: "fedcba9876543210"}},
		{"missing", filepath.Join(t.TempDir(), "none"), id},
		// A directory opens and reads as 4096 bytes: it was exit 1.
		{"a directory", t.TempDir(), id},
	} {
		ix, err := Open(tc.path, tc.want)
		if err == nil {
			ix.Close()
			t.Errorf("%s: opened", tc.name)
			continue
		}
		if !badinput.Is(err) {
			t.Errorf("%s: %v is not bad input", tc.name, err)
		}
	}
	ix, err := Open(path, id)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	long := make([]int32, ix.Header().Tokens+1)
	for _, q := range [][]int32{nil, long, make([]int32, 17), {0, 5}, {-1}} {
		if _, err := ix.Count(q); !badinput.Is(err) {
			t.Errorf("count of a %d-token window %v: %v, want bad input", len(q), q[:min(len(q), 3)], err)
		}
	}
}

// TestResealedDamage: a body altered and checksummed again (a builder's
// bug, a hand edit), so that only the structure can tell, is refused as
// bad input when Open reads it — a document past the stream or a suffix
// array entry past it was read out of the mapping (a panic; found by
// fuzzing).
func TestResealedDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	path := filepath.Join(t.TempDir(), "tokens.idx")
	if _, err := Build(path, Options{Vocab: 5, MaxWindow: 16}, scanOf(corpus(rng, 6, 5, 0, []int32{1, 3}))); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hOff := int64(binary.LittleEndian.Uint64(raw[12:]))
	var h Header
	if err := json.Unmarshal(raw[hOff:], &h); err != nil {
		t.Fatal(err)
	}
	docsOff, saOff, _ := h.sections()
	// reseal writes body into a copy of the file with its checksums made
	// right again.
	reseal := func(name string, edit func(body []byte)) string {
		b := append([]byte{}, raw[:hOff]...)
		edit(b)
		h2 := h
		h2.BodyCRC = crc32.Checksum(b[bodyOff:], castagnoli)
		hdr, err := json.Marshal(h2)
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint32(b[20:], uint32(len(hdr)))
		binary.LittleEndian.PutUint32(b[24:], crc32.Checksum(hdr, castagnoli))
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, append(b, hdr...), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if ix, err := Open(reseal("same", func([]byte) {}), Identity{}); err != nil {
		t.Fatalf("resealed without a change: %v", err)
	} else {
		ix.Close()
	}
	for _, tc := range []struct {
		name string
		edit func(body []byte)
		want string
	}{
		{"second document starts past the stream", func(b []byte) {
			binary.LittleEndian.PutUint64(b[docsOff+docFields*8:], uint64(h.Stream)+1<<40)
		}, "does not end at a separator"},
		{"suffix array entry past the stream", func(b []byte) {
			binary.LittleEndian.PutUint32(b[saOff+4:], uint32(h.Stream)+0x9f0000)
		}, "suffix array entry 1"},
	} {
		ix, err := Open(reseal(tc.name, tc.edit), Identity{})
		if err == nil {
			ix.Close()
			t.Errorf("%s: opened", tc.name)
			continue
		}
		if !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want bad input saying %q", tc.name, err, tc.want)
		}
	}
}

// TestDeterministic: the same corpus builds the same bytes, whatever the
// partition size.
func TestDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	docs := corpus(rng, 80, 4, 0, []int32{1, 2})
	var files [][]byte
	for _, part := range []int{0, 5, 40} {
		p := filepath.Join(t.TempDir(), "i")
		if _, err := Build(p, Options{Vocab: 4, Partition: part}, scanOf(docs)); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, raw)
	}
	for i := 1; i < len(files); i++ {
		if string(files[i]) != string(files[0]) {
			t.Fatalf("partition case %d built other bytes", i)
		}
	}
}

// TestCountWindowBeyondTheIndex: a window longer than the index's
// max_window has no count (-1, which eval leaves out and warns of); one
// no longer than max_window but longer than the whole corpus is not in it
// (0, where it read as unknown).
func TestCountWindowBeyondTheIndex(t *testing.T) {
	docs := []doc{{1, 1, []int32{0, 1, 2, 7}}, {2, 1, []int32{8, 9, 3}}}
	ix := build(t, docs, Options{Vocab: 10, MaxWindow: 16})
	for _, tc := range []struct {
		q    []int32
		want int64
	}{
		{[]int32{0, 1}, 1},
		{make([]int32, 10), 0},  // longer than the 7-token corpus
		{make([]int32, 17), -1}, // longer than max_window
	} {
		if got, err := ix.CountWindow(tc.q); err != nil || got != tc.want {
			t.Errorf("CountWindow of %d tokens = %d, %v; want %d", len(tc.q), got, err, tc.want)
		}
	}
}
