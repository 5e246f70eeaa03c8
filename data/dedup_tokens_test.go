package data

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// naiveSpans is one dedup pass by a scan: every window of L tokens already
// seen at an earlier position of the stream (windows never span two
// documents) is marked, and each document's marked windows merged.
func naiveSpans(docs [][]int32, L int) map[int][]span {
	seen := map[string]bool{}
	out := map[int][]span{}
	for k, d := range docs {
		var spans []span
		for p := 0; p+L <= len(d); p++ {
			key := fmt.Sprint(d[p : p+L])
			if !seen[key] {
				seen[key] = true
				continue
			}
			if n := len(spans); n > 0 && p <= spans[n-1].to {
				spans[n-1].to = p + L
			} else {
				spans = append(spans, span{p, p + L})
			}
		}
		if len(spans) > 0 {
			out[k] = spans
		}
	}
	return out
}

// suffixSpans is the same pass by repeatedSpans.
func suffixSpans(t *testing.T, docs [][]int32, vocab, L, partition int) map[int][]span {
	t.Helper()
	out := map[int][]span{}
	err := repeatedSpans(t.TempDir(), len(docs), vocab, L, partition,
		func(k int) ([]int32, error) { return docs[k], nil },
		func(k int, spans []span) error {
			out[k] = slices.Clone(spans)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// plantedCorpus makes documents of random ids over a small vocabulary (so
// that short windows repeat by chance) with planted repeats: a passage
// copied into later documents, at their first and last tokens, a document
// repeated whole, a passage repeated inside one document, a periodic run
// whose windows overlap themselves, and the stream's first and last
// tokens repeated.
func plantedCorpus(seed uint64, vocab int, big bool) [][]int32 {
	r := rand.New(rand.NewPCG(seed, 7))
	tok := func() int32 {
		if big && r.IntN(4) == 0 {
			return int32(vocab - 1 - r.IntN(8)) // ids above 2^16 when vocab is large
		}
		return int32(r.IntN(min(vocab, 40)))
	}
	rnd := func(n int) []int32 {
		d := make([]int32, n)
		for i := range d {
			d[i] = tok()
		}
		return d
	}
	var docs [][]int32
	for range 30 {
		docs = append(docs, rnd(1+r.IntN(60)))
	}
	passage := rnd(12)
	first := docs[0][:min(len(docs[0]), 6)]
	last := docs[len(docs)-1]
	last = last[max(0, len(last)-6):]
	plant := func(d []int32, at int, p []int32) []int32 {
		at = min(at, len(d))
		return slices.Concat(d[:at], p, d[at:])
	}
	docs[3] = plant(docs[3], 5, passage)
	docs[7] = plant(docs[7], 0, passage)            // at a document's start
	docs[9] = plant(docs[9], len(docs[9]), passage) // at its end
	docs[11] = slices.Clone(docs[4])                // a whole document again
	docs[13] = plant(docs[13], 2, slices.Concat(passage[:5], passage[3:10]))
	docs[15] = slices.Concat(passage, passage, passage) // repeats within a document
	periodic := make([]int32, 25)
	for i := range periodic {
		periodic[i] = int32(i % 3)
	}
	docs[17] = plant(docs[17], 4, periodic) // overlapping windows
	docs[19] = plant(docs[19], 3, first)    // the stream's first tokens
	docs = append(docs, slices.Clone(last), slices.Clone(first))
	// A window across a boundary: docs[21]'s tail + docs[22]'s head written
	// as one passage later; it must not match the two halves.
	cross := slices.Concat(docs[21][max(0, len(docs[21])-3):], docs[22][:min(3, len(docs[22]))])
	docs[25] = plant(docs[25], 1, cross)
	return docs
}

// TestRepeatedSpansEqualNaiveScan: every pass of the suffix-array dedup
// cuts what a scan cuts, on planted corpora, both stream widths, windows
// of 1 to 12 tokens and partitions small enough to split the vocabulary;
// passes until no window repeats leave no repeated window (checked by the
// scan) and keep the tokens outside the cut spans, in order.
func TestRepeatedSpansEqualNaiveScan(t *testing.T) {
	cases := []struct {
		name             string
		vocab, partition int
		big              bool
	}{
		{"2-byte ids", 300, dedupPartition, false},
		{"2-byte ids, partitions of 7", 300, 7, false},
		{"4-byte ids", 70000, dedupPartition, true},
		{"4-byte ids, partitions of 5", 70000, 5, true},
	}
	for _, c := range cases {
		for seed := uint64(1); seed <= 3; seed++ {
			for _, L := range []int{1, 2, 3, 4, 5, 8, 12} {
				t.Run(fmt.Sprintf("%s/seed%d/L%d", c.name, seed, L), func(t *testing.T) {
					docs := plantedCorpus(seed, c.vocab, c.big)
					orig := make([][]int32, len(docs))
					copy(orig, docs)
					for pass := 1; ; pass++ {
						want := naiveSpans(docs, L)
						got := suffixSpans(t, docs, c.vocab, L, c.partition)
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("pass %d: suffix array cuts %v, the scan %v", pass, got, want)
						}
						if pass == 1 && L <= 12 && len(want) == 0 {
							t.Fatalf("the planted repeats were not found")
						}
						if len(want) == 0 {
							break
						}
						for k, spans := range want {
							docs[k] = keepOutside(docs[k], spans)
						}
						if pass > 20 {
							t.Fatal("no fixed point after 20 passes")
						}
					}
					if rest := naiveSpans(docs, L); len(rest) != 0 {
						t.Fatalf("repeats left: %v", rest)
					}
					for k := range docs {
						if !isSubsequence(docs[k], orig[k]) {
							t.Fatalf("document %d: %v is not what %v kept", k, docs[k], orig[k])
						}
					}
				})
			}
		}
	}
}

// TestRepeatedSpansPlanted: the planted repeats are cut where planted.
func TestRepeatedSpansPlanted(t *testing.T) {
	docs := [][]int32{
		{1, 2, 3, 4, 5, 6},
		{9, 1, 2, 3, 4, 8},    // 1 2 3 4 again
		{7, 3, 4, 5},          // 3 4 5 again
		{4, 5, 6, 9, 9, 9, 9}, // 4 5 6 at the start; 9 9 9 overlaps itself
		{6, 9, 1},             // across documents 0|1 and 3|4: not a repeat
	}
	got := suffixSpans(t, docs, 16, 3, dedupPartition)
	want := map[int][]span{1: {{1, 5}}, 2: {{1, 4}}, 3: {{0, 3}, {4, 7}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("cuts %v, want %v", got, want)
	}
}

func isSubsequence(sub, of []int32) bool {
	i := 0
	for _, t := range of {
		if i < len(sub) && sub[i] == t {
			i++
		}
	}
	return i == len(sub)
}

// TestWideToChars: a cut between two ids of one character is widened to
// the whole character, on either side of the cut.
func TestWideToChars(t *testing.T) {
	// Ids spell bytes: "a", "é" as two ids, "b", "€" as three ids.
	bytesOf := [][]byte{{'a'}, {0xc3}, {0xa9}, {'b'}, {0xe2}, {0x82}, {0xac}}
	valid := func(ids []int32) (bool, bool) {
		var b []byte
		for _, id := range ids {
			b = append(b, bytesOf[id]...)
		}
		return len(b) == 0 || utf8.RuneStart(b[0]), utf8.Valid(b)
	}
	ids := []int32{0, 1, 2, 3, 4, 5, 6, 0}
	for _, c := range []struct{ in, want []span }{
		{nil, nil},
		{[]span{{0, 1}}, []span{{0, 1}}}, // whole characters already
		{[]span{{0, 2}}, []span{{0, 3}}}, // cut after é's first byte: its second goes too
		{[]span{{2, 3}}, []span{{1, 3}}}, // cut of é's second byte: its first goes too
		{[]span{{5, 6}}, []span{{4, 7}}}, // the middle of €
		{[]span{{0, 2}, {5, 6}}, []span{{0, 3}, {4, 7}}},
		{[]span{{3, 5}}, []span{{3, 7}}}, // b and €'s first byte
		{[]span{{6, 8}}, []span{{4, 8}}}, // to the end
	} {
		got := wideToChars(ids, c.in, valid)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("wideToChars(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestDedupTokensRows: the build's dedup of a docTable's rows (texts with
// passages copied across documents, within one, at their starts and
// ends, and characters of 2 to 4 bytes that a 300-id byte-level BPE splits
// over several ids) ends where passes of the scan end, every row's text is
// its ids decoded and whole UTF-8, and the report counts what was cut.
func TestDedupTokensRows(t *testing.T) {
	const L = 6
	base := []string{
		"Of the refraction of light by prisms, and of colours é à ü.",
		"The rays which differ in refrangibility — € and £ — differ in colour.",
		"Whence it follows that the sun's light is a mixture 🌞 of rays.",
		"Experiments with two prisms placed one after the other, ñ ñ ñ.",
	}
	texts := []string{
		base[0] + " " + base[1],
		"Another note: " + base[1] + " Then " + base[2],
		base[2] + " " + base[2] + " and once more " + base[2],
		base[3],
		"Colours é à ü and € and £ — 🌞 ñ.",
		base[0], // a whole document again
		base[3][10:] + " to the end: " + base[0][:30],
		// A cut that starts or ends inside a character: ü and ļ share
		// their last byte, ü and ú their first.
		"xü and the light of the sun, bent ü",
		"yļ and the light of the sun, bent ú",
	}
	tok, err := trainBPE(countPieces(texts), 300)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := newSpool(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sp.close()
	tab := newDocTable(sp)
	var kept []int32
	docs := make([][]int32, len(texts))
	for k, text := range texts {
		ids, err := tok.Encode(text)
		if err != nil {
			t.Fatal(err)
		}
		docs[k] = ids
		if err := tab.add(&candidate{source: "s", title: fmt.Sprint("doc ", k), text: text, ids: ids}, true, false); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, int32(k))
	}
	if err := sp.flush(); err != nil {
		t.Fatal(err)
	}
	valid := func(ids []int32) (bool, bool) {
		text := tok.Decode(ids)
		return text == "" || utf8.RuneStart(text[0]), utf8.ValidString(text)
	}
	// The reference: passes of the scan, each cut widened to characters.
	want := &DedupTokensReport{Window: L}
	cut := map[int]bool{}
	for _, d := range docs {
		want.Before += int64(len(d))
	}
	for {
		want.Passes++
		found := naiveSpans(docs, L)
		if len(found) == 0 {
			break
		}
		for k, spans := range found {
			wide := wideToChars(docs[k], spans, valid)
			want.Spans += int64(len(wide))
			want.Tokens += spanTokens(wide)
			want.Widened += spanTokens(wide) - spanTokens(spans)
			docs[k] = keepOutside(docs[k], wide)
			cut[k] = true
		}
	}
	want.Documents = len(cut)
	got, err := dedupTokens(t.TempDir(), tab, kept, tok, L, 5)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *want {
		t.Errorf("report %+v, want %+v", *got, *want)
	}
	if got.Tokens == 0 || got.Widened == 0 || got.Passes < 2 {
		t.Errorf("the corpus did not exercise the dedup: %+v", *got)
	}
	for k := range texts {
		ids, text := tab.tokens(int32(k)), tab.text(int32(k))
		if fmt.Sprint(ids) != fmt.Sprint(docs[k]) {
			t.Errorf("doc %d: ids %v, the scan kept %v", k, ids, docs[k])
		}
		if text != tok.Decode(ids) || !utf8.ValidString(text) {
			t.Errorf("doc %d: text %q is not its ids decoded as whole UTF-8", k, text)
		}
		if tab.title(int32(k)) != fmt.Sprint("doc ", k) {
			t.Errorf("doc %d: title %q", k, tab.title(int32(k)))
		}
	}
	if err := sp.err(); err != nil {
		t.Fatal(err)
	}
}

// TestDedupTokensKeyOff: off, data.dedup_tokens is in neither the cache
// key's JSON nor report.json's config, so every dataset built before the
// key existed keeps its key and bytes; on, it changes the key.
func TestDedupTokensKeyOff(t *testing.T) {
	cfg := DefaultConfig()
	in := keyInput{Format: FormatVersion, BPE: bpeVersion, Config: cfg}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "dedup_tokens") {
		t.Fatalf("the key's input names dedup_tokens while it is off: %s", raw)
	}
	off, err := in.key()
	if err != nil {
		t.Fatal(err)
	}
	in.Config.DedupTokens = 50
	on, err := in.key()
	if err != nil {
		t.Fatal(err)
	}
	if on == off {
		t.Fatal("data.dedup_tokens = 50 keeps the key of the dataset without it")
	}
	if err := (Config{DedupTokens: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "data.dedup_tokens = -1") {
		t.Errorf("Validate of data.dedup_tokens = -1: %v", err)
	}
}
