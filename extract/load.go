package extract

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/model"
)

// loadModel resolves a run, checkpoints/ or checkpoint directory to its
// newest good checkpoint and loads the model on the CPU.
func loadModel(path string) (*model.GPT, string, error) {
	g, _, ckpt, err := checkpoint.Load(path, "cpu")
	if err != nil {
		return nil, "", err // names the checkpoint and the file at fault
	}
	return g, ckpt, nil
}

// sameTokenizer checks, when the reference checkpoint sits in a run
// directory with a dataset, that its tokenizer.json is byte for byte ours:
// losses under different tokenizers are not comparable.
func sameTokenizer(ds *data.Dataset, ckpt string) error {
	runDir := filepath.Dir(filepath.Dir(ckpt)) // runDir/checkpoints/step-N
	theirs, err := os.ReadFile(filepath.Join(runDir, "data", "tokenizer.json"))
	if err != nil {
		return nil // a bare checkpoint: the vocabulary check is all we can do
	}
	ours, err := os.ReadFile(filepath.Join(ds.Dir(), "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("read tokenizer: %w", err)
	}
	if !bytes.Equal(ours, theirs) {
		return fmt.Errorf("its run %s used a different tokenizer than %s; train the reference on the same dataset tokenizer", runDir, ds.Dir())
	}
	return nil
}
