package checkpoint

import (
	"testing"

	"github.com/memo-research/memo/internal/hfgolden"
	"github.com/memo-research/memo/model"
)

// TestEveryFamilyHasGolden: every family an arch file registers has a
// checkpoint transformers wrote under testdata/hf-transformers (the lists
// are generated from the arch files and the golden directories), so an
// arch file without its golden fails here instead of going untested.
func TestEveryFamilyHasGolden(t *testing.T) {
	have := map[string][]string{}
	for _, name := range hfgolden.TransformersNames {
		dir, err := hfgolden.TransformersDir("..", name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ReadHFConfig(dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		have[c.Arch] = append(have[c.Arch], name)
	}
	for _, arch := range model.Architectures() {
		if len(have[arch]) == 0 {
			t.Errorf("family %s has no golden under testdata/hf-transformers (scripts/hf-goldens.py make)", arch)
		}
	}
}
