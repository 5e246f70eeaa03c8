package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

// TestTokenizerLoadedOnce: the checks of a spec that compares data.tokenizer
// with two models (model.init_from, extract.reference) parse the tokenizer
// file once, not once per model.
func TestTokenizerLoadedOnce(t *testing.T) {
	loads := 0
	saved := loadTokenizerVocab
	t.Cleanup(func() { loadTokenizerVocab = saved })
	loadTokenizerVocab = func(string) (int, error) { loads++; return 8, nil }
	const hf = "../testdata/hf/llama-gqa-tied"
	doc := "[data]\ntokenizer = 'hf:" + hf + "'\n[model]\ninit_from = 'hf:" + hf + "'\n[train]\nblock = 16\n[extract]\nreference = 'hf:" + hf + "'\nmode = 'fixed'\nprefix = 4\nsuffix = 4\n"
	if _, err := ParseBytes("x.toml", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if loads != 1 {
		t.Errorf("the tokenizer was loaded %d times, want 1", loads)
	}
}

// TestInitFromNamesTheDamagedFile: a run whose newest checkpoint lost its
// weights is refused naming the missing file inside it and what to do;
// the message was "train.init_from = DIR: no such file or directory",
// which read as if DIR itself were missing.
func TestInitFromNamesTheDamagedFile(t *testing.T) {
	run := t.TempDir()
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), model.Config{Preset: "nano", Vocab: 64, Context: 32, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	step, err := checkpoint.Save(run, g, nil, checkpoint.State{Step: 1, TotalSteps: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(step, checkpoint.ModelFile)); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf("[train]\ninit_from = %q\n", run)
	_, err = ParseBytes("x.toml", []byte(doc))
	if err == nil {
		t.Fatal("parsed; want the damaged checkpoint refused")
	}
	for _, want := range []string{`x.toml:2: train.init_from = "` + run + `": checkpoint `, "model.safetensors", "it is the newest checkpoint: repair it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
