package checkpoint

// A LoRA run's checkpoints: the adapters in PEFT's files, their AdamW
// moments, model.json and state.json, whose lora_base names the frozen
// weights the adapters add to. The base is not copied into every
// checkpoint (for a 7B model that would be 28 GB a checkpoint for a few
// MB of adapters): it is train.init_from, whose digest is recorded and
// checked whenever the checkpoint is read, or the model seed's own
// weights, which memo draws again in Go, the same on any machine.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/filehash"
	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch/nn"
)

// loraDigested are the files of a LoRA checkpoint whose sha256 state.json
// records and Verify checks.
var loraDigested = []string{PEFTWeightsFile, PEFTConfigFile, OptimizerFile, ModelJSONFile}

// LoRABase is the base model of a LoRA checkpoint.
type LoRABase struct {
	// Source is the directory the base weights were read from
	// (train.init_from resolved: a memo checkpoint or a Hugging Face
	// directory, absolute); "" when they are the model seed's own
	// (model.json's memo.seed), which memo draws again.
	Source string `json:"source"`
	// SHA256 is the digest of Source's weights: a memo checkpoint's
	// model.safetensors as its state.json records it, a Hugging Face
	// directory's model.safetensors (or, sharded, its index and every shard:
	// hfWeightsDigest).
	SHA256 string `json:"sha256,omitempty"`
	// Precision is "bf16" when the run held the base's block matrices in
	// bfloat16 (train.lora.base_precision): the adapters trained on the
	// base rounded so, and loading rounds it again; "" for float32.
	Precision string `json:"precision,omitempty"`
}

// NewLoRABase is the base record of a LoRA run that starts from source (a
// directory ReadSource returned; "" for the seed's weights).
func NewLoRABase(source string) (*LoRABase, error) {
	if source == "" {
		return &LoRABase{}, nil
	}
	abs, err := filepath.Abs(source)
	if err != nil {
		return nil, err
	}
	sum, err := baseDigest(abs)
	if err != nil {
		return nil, err
	}
	return &LoRABase{Source: abs, SHA256: sum}, nil
}

// baseDigest is the digest of the weights in dir, a memo checkpoint
// (recorded in its state.json, so nothing is read twice) or a Hugging Face
// directory (hashed). A LoRA checkpoint is no base: its adapters would be
// dropped.
func baseDigest(dir string) (string, error) {
	if IsHFDir(dir) {
		return hfWeightsDigest(dir)
	}
	st, err := VerifyWeights(dir)
	if err != nil {
		return "", err
	}
	if st.LoRABase != nil {
		return "", adaptersOnly(dir)
	}
	return st.SHA256[ModelFile], nil
}

// CheckWhole refuses dir, a directory ReadSource returned, when it is a
// LoRA checkpoint: it holds adapters only, no weights a run can start
// from. It reads state.json alone, so a spec is checked without hashing
// the weights (a checkpoint that is not one is left to the reads that
// follow).
func CheckWhole(dir string) error {
	if _, lora := ReadLoRAState(dir); lora && !IsHFDir(dir) {
		return adaptersOnly(dir)
	}
	return nil
}

// hfWeightsDigest is the digest of a Hugging Face directory's weights:
// model.safetensors's sha256, or for a sharded model the sha256 of a
// list of the index's and each shard's ("NAME SHA256" lines, the files
// in safetensors.WeightFiles's order). Before the shards were listed
// the index's digest alone stood for a sharded model, and a shard
// rewritten in place went unnoticed (legacyIndexDigest).
func hfWeightsDigest(dir string) (string, error) {
	files, err := safetensors.WeightFiles(dir)
	if err != nil {
		return "", err
	}
	if len(files) == 1 {
		return filehash.SHA256(files[0])
	}
	var list strings.Builder
	for _, f := range files {
		sum, err := filehash.SHA256(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&list, "%s %s\n", filepath.Base(f), sum)
	}
	h := sha256.Sum256([]byte(list.String()))
	return hex.EncodeToString(h[:]), nil
}

// LegacySourceDigests are the digests older memos gave the weights at
// path (train.init_from in any of ReadSource's forms) where SourceDigest
// now gives another: a sharded Hugging Face directory's index file alone.
// Keys made with them still name the same weights (references trained
// then are not stale). None when path does not resolve.
func LegacySourceDigests(path string) []string {
	dir, _, err := ReadSource(path)
	if err != nil || !IsHFDir(dir) {
		return nil
	}
	if sum := legacyIndexDigest(dir); sum != "" {
		return []string{sum}
	}
	return nil
}

// legacyIndexDigest is what a LoRA checkpoint written before
// hfWeightsDigest recorded for a sharded base: the index file's digest
// ("" when dir has no index).
func legacyIndexDigest(dir string) string {
	sum, err := filehash.SHA256(filepath.Join(dir, safetensors.IndexFile))
	if err != nil {
		return ""
	}
	return sum
}

func adaptersOnly(dir string) error {
	return badinput.Errorf("%s is a LoRA checkpoint (adapters only): a base must be a whole model; export it with memo export --merge and start from that", dir)
}

// SourceDigest is the digest of the weights a run starting from path
// (train.init_from in any of ReadSource's forms) loads, as a LoRA base
// records it; a LoRA checkpoint, adapters only, is refused as bad input.
func SourceDigest(path string) (string, error) {
	dir, _, err := ReadSource(path)
	if err != nil {
		return "", err
	}
	return baseDigest(dir)
}

// WeightsDigest names the weights in dir, a Hugging Face directory or a
// memo checkpoint as LoadModel resolved it: a Hugging Face directory's
// model.safetensors sha256 (hfWeightsDigest: hashed here, seconds a GB),
// a memo checkpoint's as its state.json records it (which loading
// verified). A LoRA checkpoint's is its adapters' file; base is then the
// digest of the weights they were trained on ("" for the seed's own).
func WeightsDigest(dir string) (weights, base string, err error) {
	if IsHFDir(dir) {
		weights, err = hfWeightsDigest(dir)
		return weights, "", err
	}
	st, err := ReadState(dir)
	if err != nil {
		return "", "", err
	}
	if st.LoRABase != nil {
		return st.SHA256[PEFTWeightsFile], st.LoRABase.SHA256, nil
	}
	return st.SHA256[ModelFile], "", nil
}

// Check fails, as bad input, unless b's weights are still there and
// unchanged: adapters on other weights compute another model.
func (b *LoRABase) Check() error {
	if b.Source == "" {
		return nil
	}
	sum, err := baseDigest(b.Source)
	if err != nil {
		return badinput.Errorf("LoRA base %s: %w", b.Source, err)
	}
	if sum != b.SHA256 && b.SHA256 != "" && IsHFDir(b.Source) && legacyIndexDigest(b.Source) == b.SHA256 {
		// Recorded before the shards were hashed: the index is what it
		// was, and the shards cannot be checked.
		slog.Warn("LoRA base recorded by its index alone (a checkpoint from before memo hashed shards): its shards are not checked", "base", b.Source)
		return nil
	}
	if sum != b.SHA256 {
		return badinput.Errorf("LoRA base %s: its weights have sha256 %.12s, the adapters were trained on %.12s: the base changed", b.Source, sum, b.SHA256)
	}
	return nil
}

// Fill loads b's weights into g, a model built for training with the
// checkpoint's config (model.New: the seed's weights are already there).
func (b *LoRABase) Fill(g *model.GPT) error {
	if err := b.Check(); err != nil {
		return err
	}
	if b.Source == "" {
		return nil
	}
	if err := LoadSourceWeights(g, b.Source); err != nil {
		return badinput.Errorf("LoRA base %s: %w", b.Source, err)
	}
	return nil
}

// SaveLoRA writes a checkpoint of a LoRA run under runDir/checkpoints as
// Save does, holding l's adapters in PEFT's layout (SaveAdapter: the
// directory is one peft.PeftModel.from_pretrained loads), their optimizer
// tensors, model.json and state.json with st.LoRABase set.
func SaveLoRA(runDir string, l *model.LoRA, cfg model.Config, optimizer []Named, st State, keep int) (string, error) {
	if st.LoRABase == nil {
		return "", fmt.Errorf("save LoRA checkpoint: no base recorded")
	}
	return save(runDir, cfg, []tensorFile{{OptimizerFile, optimizer}}, func(tmp string) error {
		return SaveAdapter(tmp, l, st.LoRABase.Source)
	}, st, keep)
}

// ReadLoRAState is dir's state.json when dir is a LoRA checkpoint; ok is
// false for any other directory.
func ReadLoRAState(dir string) (st State, ok bool) {
	st, err := ReadState(dir)
	return st, err == nil && st.LoRABase != nil
}

// ReadAdapterConfig is the LoRA settings of dir's adapter_config.json.
func ReadAdapterConfig(dir string) (model.LoRAOptions, error) {
	path := filepath.Join(dir, PEFTConfigFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return model.LoRAOptions{}, err
	}
	var c peftConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return model.LoRAOptions{}, fmt.Errorf("%s: %w", path, err)
	}
	if c.PeftType != "LORA" {
		return model.LoRAOptions{}, fmt.Errorf("%s: peft_type %q: memo reads LORA adapters", path, c.PeftType)
	}
	return model.LoRAOptions{Rank: c.R, Alpha: c.LoraAlpha, Dropout: c.LoraDropout, Targets: c.TargetModules}, nil
}

// LoadAdapter reads dir's adapter_model.safetensors into l's adapters;
// every one must be there with its shape.
func LoadAdapter(l *model.LoRA, dir string) error {
	params := l.Params()
	named := make([]Named, len(params))
	for i, p := range params {
		named[i] = Named{Name: p.Name, Tensor: p.Tensor}
	}
	return ReadInto(filepath.Join(dir, PEFTWeightsFile), named)
}

// loadLoRA builds the adapted model of the LoRA checkpoint dir (config
// cfg, state st) on vs: the base (LoRABase.Fill) with the adapters added
// into the weights they adapt, as every forward of training adds them
// (model.LoRA.Apply): W + (alpha/r)·B·A. The files stay apart; nothing
// merged is written. The model is a training-form one (model.New): its
// caller sets an inference precision.
func loadLoRA(vs *nn.VarStore, dir string, cfg model.Config, st State) (*model.GPT, error) {
	build := model.New // the seed's weights are the base
	if st.LoRABase.Source != "" {
		build = model.NewUninitialized
	}
	g, err := build(vs.Root(), cfg)
	if err != nil {
		return nil, badinput.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := st.LoRABase.Fill(g); err != nil {
		return nil, err
	}
	opt, err := ReadAdapterConfig(dir)
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	l, err := model.NewLoRA(g, opt)
	if err != nil {
		return nil, badinput.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := LoadAdapter(l, dir); err != nil {
		return nil, badinput.Wrap(err)
	}
	base, err := precision.BaseDType(st.LoRABase.Precision)
	if err != nil {
		return nil, badinput.Errorf("checkpoint %s: %w", dir, err)
	}
	if err := l.RoundBase(base); err != nil {
		return nil, badinput.Errorf("checkpoint %s: %w", dir, err)
	}
	l.Merge()
	return g, nil
}
