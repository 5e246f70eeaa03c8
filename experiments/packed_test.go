package experiments

import (
	"strings"
	"testing"
)

// The goldfish loss with packed rows is refused unless the spec opts in:
// packed documents straddle rows at shifting offsets, so tokens dropped in
// one repetition are trained in another.
func TestGoldfishWithPackedLayout(t *testing.T) {
	_, err := ParseBytes("x.toml", []byte("[data]\nlayout = 'packed'\n[goldfish]\nk = 4\n"))
	ce := wantConfigError(t, err, 2, `data.layout = "packed" with the goldfish loss`, "goldfish.allow_packed = true")
	if ce.Key != "data.layout" {
		t.Errorf("key = %q, want data.layout (%s)", ce.Key, err)
	}
	for _, ok := range []string{
		"[data]\nlayout = 'packed'\n[goldfish]\nk = 4\nallow_packed = true\n",
		"[data]\nlayout = 'packed'\n[goldfish]\nk = 0\n",
		"[data]\nlayout = 'packed'\n[goldfish]\nstrategy = 'none'\n",
		"[data]\nlayout = 'padded'\n[goldfish]\nk = 4\n",
	} {
		if _, err := ParseBytes("x.toml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	// The opt-in key is written only when set, so the resolved config and
	// hash of every existing spec stay what they were.
	spec, err := ParseBytes("x.toml", []byte("[goldfish]\nk = 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := spec.TOML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "allow_packed") {
		t.Errorf("resolved spec mentions allow_packed though it is unset:\n%s", b)
	}
}

// train.match_supervised_tokens shortens a standard-loss run: it is refused
// by key on a goldfish run and without a mask to count, before any work.
func TestMatchSupervisedTokensChecked(t *testing.T) {
	_, err := ParseBytes("x.toml", []byte("[train]\nmatch_supervised_tokens = 4\n[goldfish]\nk = 4\n"))
	wantConfigError(t, err, 2, "train.match_supervised_tokens = 4: needs goldfish.k = 0")
	_, err = ParseBytes("x.toml", []byte("[train]\nmatch_supervised_tokens = 4\n[goldfish]\nk = 0\nstrategy = 'none'\n"))
	wantConfigError(t, err, 2, `goldfish.strategy = "none": name the goldfish mask`)
	if _, err := ParseBytes("x.toml", []byte("[train]\nmatch_supervised_tokens = 4\n[goldfish]\nk = 0\nstrategy = 'hash-table'\n")); err != nil {
		t.Error(err)
	}
}

// A goldfish setting that leaves a row no target to drop (h or start at
// or past train.block) is a standard-loss run under goldfish's name:
// refused by key, with the largest value that still drops some.
func TestGoldfishDropsSomethingInARow(t *testing.T) {
	for _, tc := range []struct {
		spec string
		line int
		want string
	}{
		{"[train]\nblock = 64\n[goldfish]\nk = 4\nh = 65\n", 5, "goldfish.h = 65: goldfish.strategy = \"hash-table\" never drops a row's first 64 targets, and a row has 64 (train.block), so nothing would be dropped: want goldfish.h <= 64"},
		{"[train]\nblock = 64\n[goldfish]\nk = 4\nh = 500\nstrategy = 'hash-avalanche'\n", 5, "want goldfish.h <= 64"},
		{"[train]\nblock = 64\n[goldfish]\nk = 4\nh = 64\nstrategy = 'rolling'\n", 5, "want goldfish.h <= 63"},
		{"[train]\nblock = 64\n[goldfish]\nk = 4\nstart = 100000\nstrategy = 'static'\n", 5, "goldfish.start = 100000: goldfish.strategy = \"static\" never drops a row's first 100000 targets, and a row has 64 (train.block), so nothing would be dropped: want goldfish.start <= 63"},
	} {
		_, err := ParseBytes("x.toml", []byte(tc.spec))
		wantConfigError(t, err, tc.line, tc.want)
	}
	for _, ok := range []string{
		"[train]\nblock = 64\n[goldfish]\nk = 4\nh = 64\n",
		"[train]\nblock = 64\n[goldfish]\nk = 4\nh = 63\nstrategy = 'rolling'\n",
		"[train]\nblock = 64\n[goldfish]\nk = 4\nstart = 63\nstrategy = 'static'\n",
		"[train]\nblock = 64\n[goldfish]\nk = 4\nh = 500\nstrategy = 'random'\n",
		"[train]\nblock = 64\n[goldfish]\nk = 0\nh = 500\n",
	} {
		if _, err := ParseBytes("x.toml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
