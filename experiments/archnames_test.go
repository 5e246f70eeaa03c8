package experiments

import (
	"slices"
	"testing"

	"github.com/memo-research/memo/experiments/internal/keydoc"
	"github.com/memo-research/memo/model"
)

// TestArchNamesMatchRegistry: the families keydoc reads from the arch files'
// source, for model.arch's generated doc, are those registered at run time.
func TestArchNamesMatchRegistry(t *testing.T) {
	got, err := keydoc.ArchNames("../model")
	if err != nil {
		t.Fatal(err)
	}
	if want := model.Architectures(); !slices.Equal(got, want) {
		t.Errorf("arch files declare %v; model registers %v", got, want)
	}
}
