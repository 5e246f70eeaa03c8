package experiments

import (
	"fmt"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
)

// TestImportLabel: a training error about an imported model's weights
// names model.init_from, the key the spec set (issue 25: it said
// train.init_from), and keeps its bad-input mark.
func TestImportLabel(t *testing.T) {
	err := fmt.Errorf("stage: %w", badinput.Errorf(`train.init_from = "/m": tensor x: value 0 is NaN`))
	got := importLabel(err, "hf:/m", "/m")
	if got.Error() != `stage: model.init_from = "hf:/m": tensor x: value 0 is NaN` || !badinput.Is(got) {
		t.Errorf("importLabel = %q (bad input %v)", got, badinput.Is(got))
	}
	if got := importLabel(err, "", "/m"); got != err {
		t.Errorf("without model.init_from: %v, want the error unchanged", got)
	}
	if got := importLabel(nil, "hf:/m", "/m"); got != nil {
		t.Errorf("nil error: %v", got)
	}
}
