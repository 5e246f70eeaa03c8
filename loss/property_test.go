package loss

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomTokens draws n ids in [lo, hi) from a fixed stream.
func randomTokens(seed uint64, n int, lo, hi int32) []int32 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]int32, n)
	for i := range out {
		out[i] = lo + r.Int32N(hi-lo)
	}
	return out
}

func mustNew(t testing.TB, cfg Config) Masker {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// firstMaskable is the first position a strategy may drop.
func firstMaskable(cfg Config) int {
	switch cfg.Strategy {
	case StrategyHashTable, StrategyHashAvalanche:
		return cfg.H - 1
	case StrategyRolling:
		return cfg.H
	}
	return 0
}

func TestDropRate(t *testing.T) {
	// Ids from 2 up, as in real text: the product's blind spots (0 and 1)
	// are tested separately.
	const n = 1 << 18
	targets := randomTokens(1, n, 2, 50257)
	dropped := make([]bool, n)
	for _, strategy := range []string{StrategyHashTable, StrategyHashAvalanche, StrategyRolling, StrategyRandom} {
		for _, k := range []int{2, 3, 4, 8, 32, 128} {
			// h >= 2: at h = 1 the decision is a function of one token,
			// so a 50k vocabulary gives only 50k independent draws.
			for _, h := range []int{2, 4, 13} {
				cfg := Config{Strategy: strategy, K: k, H: h, Seed: 99}
				t.Run(fmt.Sprintf("%s/k%d/h%d", strategy, k, h), func(t *testing.T) {
					mustNew(t, cfg).Mask(targets, dropped)
					from := firstMaskable(cfg)
					count := len(positions(dropped[from:]))
					rate := float64(count) / float64(n-from)
					p := 1 / float64(k)
					sigma := math.Sqrt(p * (1 - p) / float64(n-from))
					if math.Abs(rate-p) > 3*sigma {
						t.Errorf("drop rate %.5f, want %.5f ± %.5f (3σ)", rate, p, 3*sigma)
					}
				})
			}
		}
	}
}

func TestEarlyPositionsNeverDropped(t *testing.T) {
	// All-zero rows make the product strategies drop every position they
	// may (key 0, table[0] = 0.2337 < 1/4), so the guard is what is tested.
	zeros := make([]int32, 64)
	for _, strategy := range []string{StrategyHashTable, StrategyHashAvalanche, StrategyRolling} {
		for _, h := range []int{1, 2, 7, 13, 40, 64, 80} {
			cfg := Config{Strategy: strategy, K: 2, H: h}
			m := mustNew(t, cfg)
			from := firstMaskable(cfg)
			for trial := range 200 {
				row := randomTokens(uint64(trial), 64, 0, 8)
				if trial == 0 {
					row = zeros
				}
				dropped := make([]bool, len(row))
				for i := range dropped {
					dropped[i] = true // stale values must be overwritten
				}
				m.Mask(row, dropped)
				if ps := positions(dropped); len(ps) > 0 && ps[0] < from {
					t.Fatalf("%s h=%d row %d: dropped %d < %d", strategy, h, trial, ps[0], from)
				}
			}
		}
	}
	m := mustNew(t, Config{Strategy: StrategyHashTable, K: 4, H: 13})
	dropped := make([]bool, 64)
	m.Mask(zeros, dropped)
	if got := len(positions(dropped)); got != 64-12 {
		t.Errorf("all-zero row: %d dropped, want every one of the %d from position 12", got, 64-12)
	}
}

// TestSameWindowSameDecision checks the point of hashing: a decision
// depends on the window only, not on where it sits in a row or which row.
func TestSameWindowSameDecision(t *testing.T) {
	for _, strategy := range []string{StrategyHashTable, StrategyHashAvalanche, StrategyRolling} {
		for _, h := range []int{1, 3, 13} {
			cfg := Config{Strategy: strategy, K: 3, H: h, Seed: 5, ExemptIDs: []int32{4}}
			t.Run(fmt.Sprintf("%s/h%d", strategy, h), func(t *testing.T) {
				m := mustNew(t, cfg)
				// Text made of 10 recurring 40-token passages (ids 0-9 only,
				// so 0 and 1 occur) puts each window at many offsets.
				var seq []int32
				picks := randomTokens(3, 500, 0, 10)
				for _, c := range picks {
					seq = append(seq, randomTokens(uint64(1000+c), 40, 0, 10)...)
				}
				seen := map[string]bool{}
				repeats := 0
				for start := 0; start < len(seq); {
					n := min(len(seq)-start, 50+start%97)
					row := seq[start : start+n]
					dropped := make([]bool, n)
					m.Mask(row, dropped)
					for p := firstMaskable(cfg); p < n; p++ {
						// The window plus the target itself (the rolling
						// strategy's exemption looks at it).
						key := fmt.Sprint(row[max(0, p-h) : p+1])
						if prev, ok := seen[key]; ok {
							repeats++
							if prev != dropped[p] {
								t.Fatalf("window %s: decision %v here, %v elsewhere", key, dropped[p], prev)
							}
						}
						seen[key] = dropped[p]
					}
					start += n
				}
				if repeats < 1000 {
					t.Fatalf("only %d repeated windows: the test checks too little", repeats)
				}
				// Shifting a row by a prefix shifts its decisions.
				row := randomTokens(9, 300, 2, 50257)
				prefix := randomTokens(10, 37, 2, 50257)
				a := make([]bool, len(row))
				b := make([]bool, len(prefix)+len(row))
				m.Mask(row, a)
				m.Mask(append(slices.Clone(prefix), row...), b)
				from := firstMaskable(cfg)
				if !slices.Equal(a[from:], b[len(prefix)+from:]) {
					t.Errorf("decisions changed when the row moved by %d", len(prefix))
				}
			})
		}
	}
}

// TestProductQuirks pins the reference's blind spots, which hash-table and
// hash-avalanche keep and rolling fixes.
func TestProductQuirks(t *testing.T) {
	base := randomTokens(4, 13, 2, 50257)
	perm := slices.Clone(base)
	slices.Reverse(perm)
	withOne := append(slices.Clone(base[:6]), append([]int32{1}, base[6:]...)...)
	if TableIndex(base) != TableIndex(perm) {
		t.Errorf("product key depends on order")
	}
	if TableIndex(base) != TableIndex(withOne) {
		t.Errorf("token 1 changes the product key")
	}
	withZero := slices.Clone(base)
	withZero[5] = 0
	if TableIndex(withZero) != 0 {
		t.Errorf("a window with token 0 has key %d, want 0", TableIndex(withZero))
	}

	// Rolling: reversing windows must flip decisions about as often as two
	// independent draws disagree (2p(1-p) = 4/9 at k=3), not never.
	const k, h = 3, 8
	m := mustNew(t, Config{Strategy: StrategyRolling, K: k, H: h, Seed: 1})
	diff, zeroOneDiff, n := 0, 0, 4000
	for i := range n {
		w := randomTokens(uint64(100+i), h+1, 2, 50257)
		r := slices.Clone(w)
		slices.Reverse(r[:h])
		z := slices.Clone(w)
		z[i%h] = []int32{0, 1}[i%2] // a window with a 0 or 1 in it
		da, db, dz := make([]bool, h+1), make([]bool, h+1), make([]bool, h+1)
		m.Mask(w, da)
		m.Mask(r, db)
		m.Mask(z, dz)
		if da[h] != db[h] {
			diff++
		}
		if da[h] != dz[h] {
			zeroOneDiff++
		}
	}
	want := 2 * (1.0 / k) * (1 - 1.0/k) * float64(n)
	sigma := math.Sqrt(want)
	for name, got := range map[string]int{"reversed": diff, "0/1 substituted": zeroOneDiff} {
		if math.Abs(float64(got)-want) > 4*sigma {
			t.Errorf("rolling: %s windows changed %d of %d decisions, want about %.0f", name, got, n, want)
		}
	}
}

func TestRollingExempt(t *testing.T) {
	row := randomTokens(11, 5000, 0, 6) // ids 0..5; 0 and 5 exempt
	plain := make([]bool, len(row))
	ex := make([]bool, len(row))
	mustNew(t, Config{Strategy: StrategyRolling, K: 2, H: 4, Seed: 3}).Mask(row, plain)
	mustNew(t, Config{Strategy: StrategyRolling, K: 2, H: 4, Seed: 3, ExemptIDs: []int32{5, 0, 5}}).Mask(row, ex)
	exemptDropsAvoided := 0
	for p, t0 := range row {
		exempt := t0 == 0 || t0 == 5
		switch {
		case exempt && ex[p]:
			t.Fatalf("exempt token %d at %d dropped", t0, p)
		case !exempt && ex[p] != plain[p]:
			t.Fatalf("position %d (token %d): exemption changed a non-exempt decision", p, t0)
		case exempt && plain[p]:
			exemptDropsAvoided++
		}
	}
	if exemptDropsAvoided == 0 {
		t.Fatal("no exempt token would have been dropped: the test checks nothing")
	}
}

func TestStaticAndSeededRandom(t *testing.T) {
	row := randomTokens(12, 100, 0, 50257)
	d := make([]bool, len(row))
	mustNew(t, Config{Strategy: StrategyStatic, K: 5, Start: 3}).Mask(row, d)
	for p := range d {
		if want := p >= 3 && (p-3)%5 == 0; d[p] != want {
			t.Fatalf("static: position %d dropped=%v", p, d[p])
		}
	}

	cfg := Config{Strategy: StrategyRandom, K: 4, Seed: 42}
	a, b := mustNew(t, cfg).(RowMasker), mustNew(t, cfg).(RowMasker)
	// The same stream position gives the same mask whatever was masked
	// before: b masks the rows in reverse order.
	rowsA, rowsB := make([][]bool, 3), make([][]bool, 3)
	for i := range 3 {
		rowsA[i] = make([]bool, len(row))
		a.MaskRow(uint64(i), row, rowsA[i])
	}
	for i := 2; i >= 0; i-- {
		rowsB[i] = make([]bool, len(row))
		b.MaskRow(uint64(i), row, rowsB[i])
	}
	for i := range rowsA {
		if !slices.Equal(rowsA[i], rowsB[i]) {
			t.Fatalf("random: same seed and row %d gave different masks in another call order", i)
		}
	}
	if slices.Equal(rowsA[0], rowsA[1]) {
		t.Error("random: a repeated text at another stream position got the same mask")
	}
	plain := make([]bool, len(row))
	a.Mask(row, plain)
	a.Mask(row, plain)
	if !slices.Equal(plain, rowsA[0]) {
		t.Error("random: Mask differs from MaskRow(0) (Mask must hold no call counter)")
	}
	other := make([]bool, len(row))
	mustNew(t, Config{Strategy: StrategyRandom, K: 4, Seed: 43}).Mask(row, other)
	if slices.Equal(other, rowsA[0]) {
		t.Error("random: seeds 42 and 43 gave the same mask")
	}
}

func TestMaskBatch(t *testing.T) {
	m := mustNew(t, Config{Strategy: StrategyStatic, K: 2})
	rows := [][]int32{{1, 2, 3, 4, 5}, {1, 2}, {}}
	dropped := make([]bool, 15)
	for i := range dropped {
		dropped[i] = true
	}
	if err := MaskBatch(m, 0, rows, dropped); err != nil {
		t.Fatal(err)
	}
	if got, want := positions(dropped), []int{0, 2, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("dropped %v, want %v", got, want)
	}
	if err := MaskBatch(m, 0, rows, make([]bool, 14)); err == nil {
		t.Error("MaskBatch accepted a wrongly sized buffer")
	}

	// A row-keyed masker masks rows[i] as row first+i.
	r := mustNew(t, Config{Strategy: StrategyRandom, K: 2, Seed: 9}).(RowMasker)
	long := randomTokens(5, 40, 0, 1000)
	batch := make([]bool, 2*len(long))
	if err := MaskBatch(r, 100, [][]int32{long, long}, batch); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		want := make([]bool, len(long))
		r.MaskRow(100+uint64(i), long, want)
		if !slices.Equal(batch[i*len(long):(i+1)*len(long)], want) {
			t.Errorf("MaskBatch(first 100): row %d is not masked as stream row %d", i, 100+i)
		}
	}
}

// TestBlockProductsMatchDirect checks the two-block product algorithm
// against multiplying every window out, for widths on both sides of
// maxBlock and ids that make products wrap, vanish and change sign.
func TestBlockProductsMatchDirect(t *testing.T) {
	for _, h := range []int{1, 2, 3, 5, 13, 31, 63, 64, 65, 100} {
		for _, n := range []int{0, 1, h - 1, h, h + 1, 2*h + 3, 517} {
			if n < 0 {
				continue
			}
			row := randomTokens(uint64(h*1000+n), n, -3, 1<<20)
			for _, k := range []int{2, 3} {
				for _, m := range []Masker{newHashTableMasker(k, h), newAvalancheMasker(k, h)} {
					got := make([]bool, n)
					m.Mask(row, got)
					want := make([]bool, n)
					for p := h - 1; p < n; p++ {
						key := int64(1)
						for _, tok := range row[p-h+1 : p+1] {
							key *= int64(tok)
						}
						switch m := m.(type) {
						case *hashTableMasker:
							want[p] = Table()[TableIndex(row[p-h+1:p+1])] < float32(1.0/float64(k))
						case *avalancheMasker:
							want[p] = float32(WangHash32(uint64(key))) < m.thr
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%T h=%d n=%d k=%d: block products differ from direct ones", m, h, n, k)
					}
				}
			}
		}
	}
}

// TestWangHash32 pins hashint(key, width=32) to values computed from the
// reference's Python lines with Python integers wrapped to 64 bits.
func TestWangHash32(t *testing.T) {
	for _, c := range []struct {
		key  uint64
		want uint32
	}{
		{0, 791250447}, {1, 4151993710}, {2, 2228655750}, {12345, 1193736519},
		{math.MaxUint64, 58270011}, {uint64(1<<64 - 7), 2334100678},
		{0xdeadbeefcafebabe, 1626402119}, {2971215073, 2583890685},
	} {
		if got := WangHash32(c.key); got != c.want {
			t.Errorf("WangHash32(%#x) = %d, want %d", c.key, got, c.want)
		}
	}
}

// TestRandomMaskPinned pins the random strategy's counter hash: seed 42,
// k = 4, a 32-target row at stream rows 0 and 5 drop exactly these
// positions (taken from the code as it stands). The random baseline's
// masks are part of every published run's recipe: a change to how (seed,
// row, p) are combined (splitmix64(base^p) for splitmix64(base+p), say)
// still drops about 1 in k, so the rate tests pass, yet every run's mask
// changes and published numbers no longer reproduce. Change the hash only
// on purpose, and then update these positions.
func TestRandomMaskPinned(t *testing.T) {
	m := mustNew(t, Config{Strategy: StrategyRandom, K: 4, Seed: 42}).(RowMasker)
	row := make([]int32, 32)
	for i := range row {
		row[i] = int32(100 + i) // the random strategy ignores the tokens
	}
	for _, tc := range []struct {
		row  uint64
		want []int
	}{
		{0, []int{1, 10, 14, 22, 25}},
		{5, []int{0, 3, 5, 9, 14, 21, 22, 23, 24, 28}},
	} {
		d := make([]bool, len(row))
		m.MaskRow(tc.row, row, d)
		if got := positions(d); !slices.Equal(got, tc.want) {
			t.Errorf("random k=4 seed=42 stream row %d: dropped %v, want %v", tc.row, got, tc.want)
		}
	}
}

// TestRollingIgnoresTheTarget: the rolling strategy decides target p from
// the h targets before it (targets[p-h .. p-1]; the target itself only
// through the exemption), so replacing targets[p] by another non-exempt
// token leaves dropped[p] as it was. A hash window shifted by one to take
// in the target would make the decision about the token being predicted,
// which is what goldfish must not look at; TestSameWindowSameDecision keys
// its windows on the target too and so cannot tell.
func TestRollingIgnoresTheTarget(t *testing.T) {
hs:
	for _, h := range []int{1, 3, 13} {
		cfg := Config{Strategy: StrategyRolling, K: 2, H: h, Seed: 7, ExemptIDs: []int32{4}}
		m := mustNew(t, cfg)
		row := randomTokens(21, 200, 5, 50257) // 4, the exempt id, never drawn
		want := make([]bool, len(row))
		m.Mask(row, want)
		got := make([]bool, len(row))
		for p := h; p < len(row); p++ {
			for _, tok := range []int32{5, 6, 50256} {
				if tok == row[p] {
					continue
				}
				changed := slices.Clone(row)
				changed[p] = tok
				m.Mask(changed, got)
				if got[p] != want[p] {
					t.Errorf("h=%d: target %d changed from %d to %d: dropped %v, want %v", h, p, row[p], tok, got[p], want[p])
					continue hs
				}
			}
		}
	}
}
