package experiments

import (
	"strings"
	"testing"
)

// TestDefaultLossNote: a spec that leaves [goldfish] to the default is
// told it trains the goldfish loss; one that chose a loss anywhere (its
// table, --set, a sweep axis or point) is told nothing.
func TestDefaultLossNote(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		sets      []string
		note      bool
	}{
		{"no goldfish table", "name = \"x\"\n[train]\nlr = 1e-3\n", nil, true},
		{"goldfish table without k", "name = \"x\"\n[goldfish]\nh = 7\n", nil, true},
		{"k set", "name = \"x\"\n[goldfish]\nk = 4\n", nil, false},
		{"standard loss", "name = \"x\"\n[goldfish]\nk = 0\n", nil, false},
		{"strategy set", "name = \"x\"\n[goldfish]\nstrategy = \"static\"\n", nil, false},
		{"strategy none", "name = \"x\"\n[goldfish]\nstrategy = \"none\"\n", nil, false},
		{"dotted key", "name = \"x\"\ngoldfish.k = 8\n", nil, false},
		{"--set", "name = \"x\"\n", []string{"goldfish.k=0"}, false},
		{"sweep axis", "name = \"x\"\n[sweep]\n\"goldfish.k\" = [0, 4]\n", nil, false},
		{"sweep point", "name = \"x\"\n[[sweep_points]]\n\"goldfish.k\" = 0\n", nil, false},
		{"sweep over another key", "name = \"x\"\n[sweep]\n\"train.lr\" = [1e-3, 2e-3]\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := applyOverrides([]byte(tc.doc), tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			s, err := decode("x.toml", doc, "x")
			if err != nil {
				t.Fatal(err)
			}
			note := s.DefaultLossNote()
			if (note != "") != tc.note {
				t.Fatalf("note %q, want one: %v", note, tc.note)
			}
			if tc.note && !strings.Contains(note, "k=4") {
				t.Errorf("note %q does not name the default k", note)
			}
		})
	}
}
