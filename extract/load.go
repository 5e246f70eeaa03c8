package extract

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
)

// loadModel resolves a run, checkpoints/ or checkpoint directory to its
// newest good checkpoint, or takes a Hugging Face model directory, and
// loads the model on device (extract.device; empty is the CPU) in
// precision (extract.precision), checked before any weight is read.
func loadModel(path, device, prec string) (*model.GPT, string, error) {
	// Each refusal here is of what the user named (a device, a precision,
	// a checkpoint): bad input, exit 2, as score and generate say it.
	dev, err := torchx.ResolveDeviceFor("extract.device", device)
	if err != nil {
		return nil, "", badinput.Wrap(err)
	}
	if err := precision.Check(prec, false, dev); err != nil {
		return nil, "", badinput.Errorf("extract.precision: %w", err)
	}
	// "hf:DIR" (as in extract.reference) or a bare Hugging Face directory.
	g, ckpt, err := checkpoint.LoadModel(strings.TrimPrefix(path, "hf:"), device, prec)
	if err != nil {
		return nil, "", badinput.Wrap(err) // names the checkpoint and the file at fault
	}
	return g, ckpt, nil
}

// sameTokenizer checks, for a reference model, what SameTokenizer does.
func sameTokenizer(ds *data.Dataset, ckpt string) error {
	if err := SameTokenizer(ds, ckpt); err != nil {
		return fmt.Errorf("%w; a reference model must share the dataset's tokenizer", err)
	}
	return nil
}

// SameTokenizer checks, when the checkpoint sits in a run directory with a
// dataset (or is a Hugging Face directory with its tokenizer.json), that
// its tokenizer.json is byte for byte the dataset's: a model scored on ids
// of another tokenizer gives losses and completions that mean nothing.
// A bare checkpoint passes (the vocabulary check is all there is).
func SameTokenizer(ds *data.Dataset, ckpt string) error {
	runDir := filepath.Dir(filepath.Dir(ckpt)) // runDir/checkpoints/step-N
	theirsPath := filepath.Join(runDir, "data", "tokenizer.json")
	if checkpoint.IsHFDir(ckpt) {
		runDir, theirsPath = ckpt, filepath.Join(ckpt, checkpoint.HFTokenizerFile)
	}
	theirs, err := os.ReadFile(theirsPath)
	if err != nil {
		return nil // a bare checkpoint: the vocabulary check is all we can do
	}
	ours, err := os.ReadFile(filepath.Join(ds.Dir(), "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("read tokenizer: %w", err)
	}
	if !bytes.Equal(ours, theirs) {
		return fmt.Errorf("%s used a different tokenizer than %s", runDir, ds.Dir())
	}
	return nil
}
