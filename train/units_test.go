package train

import (
	"slices"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"

	"github.com/memo-research/memo/model"
)

// stageUnits puts every parameter of a real model in one unit, each unit a
// run of consecutive parameters, block i's in unit 1+i and the embedding
// in unit 0, which a tied head reads too.
func TestStageUnitsOfModels(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  model.Config
	}{
		{"llama tied", model.Config{Preset: "nano", Vocab: 97, Seed: 1}},
		{"llama untied", model.Config{Preset: "nano", Vocab: 97, Seed: 2, Untied: true}},
		{"gpt2 learned positions", model.Config{Arch: "gpt2", Preset: "nano", Vocab: 97, Seed: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			layers := g.Config().Layers
			params := g.Params()
			units, err := stageUnits(params, layers)
			if err != nil {
				t.Fatal(err)
			}
			if len(units) != layers+2 {
				t.Fatalf("%d units for %d layers, want %d", len(units), layers, layers+2)
			}
			seen := map[int]bool{}
			for u, idx := range units {
				if len(idx) == 0 {
					t.Errorf("unit %d is empty", u)
				}
				for k, i := range idx {
					if seen[i] || (k > 0 && i != idx[k-1]+1) {
						t.Fatalf("unit %d: %v is not a run of new parameters", u, idx)
					}
					seen[i] = true
				}
			}
			if len(seen) != len(params) {
				t.Fatalf("units cover %d of %d parameters", len(seen), len(params))
			}
			if !strings.Contains(params[units[0][0]].Name, "embed") && !strings.Contains(params[units[0][0]].Name, "wte") {
				t.Errorf("unit 0 starts with %s, want the token embedding", params[units[0][0]].Name)
			}
			if n := params[units[1][0]].Name; !strings.Contains(n, ".0.") {
				t.Errorf("unit 1 starts with %s, want block 0's", n)
			}
			heads := headUnits(layers, tc.cfg.Untied)
			if heads[0] != layers+1 || slices.Contains(heads, 0) == tc.cfg.Untied {
				t.Errorf("head units %v (untied %v): want the last, and 0 when tied", heads, tc.cfg.Untied)
			}
		})
	}
}

// Parameters out of stage order, or in a layer the model does not have,
// are refused: a unit is read as one flat vector.
func TestStageUnitsRefuses(t *testing.T) {
	p := func(name string, layer int) model.Param { return model.Param{Name: name, Layer: layer} }
	for _, tc := range []struct {
		name   string
		params []model.Param
		want   string
	}{
		{"ordered", []model.Param{p("e", model.BeforeBlocks), p("a", 0), p("b", 0), p("c", 1), p("n", model.AfterBlocks)}, ""},
		{"apart", []model.Param{p("e", model.BeforeBlocks), p("a", 0), p("c", 1), p("b", 0), p("n", model.AfterBlocks)}, "b is apart"},
		{"no such layer", []model.Param{p("e", model.BeforeBlocks), p("a", 2)}, "a in layer 2 of 2"},
		{"unknown place", []model.Param{p("x", -3)}, "x in layer -3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := stageUnits(tc.params, 2)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
