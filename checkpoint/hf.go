package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/memlimit"
	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
)

// Hugging Face model directories: config.json, model.safetensors (or
// shards listed by model.safetensors.index.json), and usually
// tokenizer.json and generation_config.json beside them.
const (
	HFConfigFile           = "config.json"
	HFTokenizerFile        = "tokenizer.json"
	HFGenerationConfigFile = "generation_config.json"
)

// IsHFDir reports whether dir is a Hugging Face model directory: a
// config.json with weights in safetensors beside it.
func IsHFDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, HFConfigFile)); err != nil {
		return false
	}
	for _, f := range []string{ModelFile, safetensors.IndexFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// ReadHFConfig maps dir's config.json to a model config.
func ReadHFConfig(dir string) (model.Config, error) {
	path := filepath.Join(dir, HFConfigFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return model.Config{}, fmt.Errorf("%s: no config.json: not a Hugging Face model directory", dir)
		}
		return model.Config{}, err
	}
	c, err := model.FromHF(raw)
	if err != nil {
		return model.Config{}, fmt.Errorf("%s: %w", dir, err) // FromHF's errors name config.json and the key
	}
	return c, nil
}

// LoadHF builds the model of a Hugging Face directory on device, its
// weights streamed tensor by tensor from safetensors (F32, BF16 or F16,
// computed in float32): peak memory stays near the float32 weights.
func LoadHF(dir, device string) (*model.GPT, *nn.VarStore, error) {
	return loadHF(dir, device, "")
}

// loadHF is LoadHF, or with precision set for inference (see buildForLoad).
func loadHF(dir, device, prec string) (*model.GPT, *nn.VarStore, error) {
	dev, err := torchx.ResolveDevice(device)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := ReadHFConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := memlimit.CheckOn(filepath.Join(dir, "config.json"), cfg, bytesPerWeight(prec), dev); err != nil {
		return nil, nil, err
	}
	vs := nn.NewVarStore(dev)
	g, err := buildForLoad(vs.Root(), cfg, prec)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := LoadHFWeights(g, dir); err != nil {
		return nil, nil, err
	}
	if err := precision.Set(g, prec, false); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	return g, vs, nil
}

// buildForLoad builds the unset model a load fills: for training and
// comparison (precision empty) the model memo trains, for inference
// (LoadModel: precision set, fp32 included) one in that precision with
// its layers joined (precision.NewForInference).
func buildForLoad(p *nn.Path, cfg model.Config, prec string) (*model.GPT, error) {
	if prec == "" {
		return model.NewUninitialized(p, cfg)
	}
	return precision.NewForInference(p, cfg, prec)
}

// bytesPerWeight is what each weight of an inference model in precision
// prec takes at least: 4 in float32, 2 in bf16 or fp16.
func bytesPerWeight(prec string) float64 {
	if dt, err := precision.Parse(prec, false); err == nil && dt != gotch.Float {
		return 2
	}
	return 4
}

// hfBuffers are tensors some Hugging Face checkpoints carry that are not
// weights: rotary frequencies and causal-mask buffers, which memo computes
// itself (older Pythia and Llama conversions saved them, and OpenAI's GPT-2
// files hold h.N.attn.bias and h.N.attn.masked_bias; the attention's real
// bias is attn.c_attn.bias, which this never matches).
var hfBuffers = regexp.MustCompile(`(^|\.)(rotary_emb\.inv_freq|attention\.bias|attention\.masked_bias|attn\.bias|attn\.masked_bias)$`)

// hfBasePrefixes are the base-model prefixes of the families' tensor names
// (transformers' base_model_prefix). Files saved from a base model rather
// than its causal-LM class leave it out: openai-community/gpt2,
// gpt2-medium and distilgpt2 name their tensors wte.weight and
// h.0.attn.c_attn.weight, which transformers loads as
// transformer.wte.weight and so on.
var hfBasePrefixes = []string{"transformer.", "model.", "gpt_neox."}

// hfParam is g's parameter of a file's tensor name: by that name, or by
// it under the family's base-model prefix.
func hfParam(g *model.GPT, name string) (model.Param, bool) {
	if p, ok := g.Param(name); ok {
		return p, true
	}
	for _, prefix := range hfBasePrefixes {
		if !strings.HasPrefix(name, prefix) {
			if p, ok := g.Param(prefix + name); ok {
				return p, true
			}
		}
	}
	return model.Param{}, false
}

// LoadHFWeights copies the weights of a Hugging Face directory into g by
// name. Every parameter of g must be there with its shape, and every tensor
// of the files must be one of g's (or a known buffer): a tensor memo does
// not understand is an error naming it, never skipped. A tied model's
// files may also hold lm_head.weight, a copy of the embedding; it is not
// read.
func LoadHFWeights(g *model.GPT, dir string) error {
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return err
	}
	defer set.Close()
	cfg := g.Config()
	loaded := map[string]bool{}
	for _, name := range set.Names() {
		info, _ := set.Info(name)
		p, ok := hfParam(g, name)
		switch {
		case !ok && hfBuffers.MatchString(name):
			continue
		case !ok && !cfg.Untied && name == g.UntiedHeadName():
			continue
		case !ok:
			return badinput.Errorf("%s: tensor %s (%s %v) is not part of a %s model as memo builds it (config.json: arch %s, %d layers, bias %v); refusing to skip it",
				set.FileOf(name), name, info.DType, info.Shape, cfg.Arch, cfg.Arch, cfg.Layers, cfg.Bias)
		}
		if loaded[p.Name] {
			return badinput.Errorf("%s: tensor %s fills %s, which another tensor already filled (the files hold it with and without the base model's prefix)", set.FileOf(name), name, p.Name)
		}
		if want := p.Tensor.MustSize(); !slices.Equal(want, info.Shape) {
			return badinput.Errorf("%s: tensor %s has shape %v, config.json implies %v", set.FileOf(name), name, info.Shape, want)
		}
		where := fmt.Sprintf("%s: tensor %s", set.FileOf(name), name)
		if err := fill(p.Tensor, info.Shape, where, func(dst []float32) error { return set.Float32Into(name, dst) }); err != nil {
			return err
		}
		loaded[p.Name] = true
		torchx.Collect() // the read buffers of one tensor at a time, not the whole model's
	}
	for _, p := range g.Params() {
		if !loaded[p.Name] {
			return badinput.Errorf("%s: no tensor %s, which a %s model with this config.json needs", dir, p.Name, cfg.Arch)
		}
	}
	return nil
}

// LoadModel loads any model memo reads for inference: a Hugging Face
// directory, or a memo run, checkpoints/ directory or step-NNNNNN
// checkpoint (its newest good checkpoint). It returns the directory the
// weights came from. prec is an inference precision (fp32, bf16,
// fp16; empty is fp32): in bf16 or fp16 each linear weight is converted as
// it is read, so the model is never held in float32 (a bf16 file's weights
// stay bf16 on the device) and is ready to use (precision.Set). Its
// layers are joined (model.NewForInference), so decoding holds no second
// copy of them: the model is for inference, not training.
func LoadModel(path, device, prec string) (*model.GPT, string, error) {
	prec = precision.Name(prec) // set: an inference model
	if IsHFDir(path) {
		g, _, err := loadHF(path, device, prec)
		return g, path, err
	}
	g, _, dir, err := load(path, device, prec)
	return g, dir, err
}

// ExportOptions are what a Hugging Face directory needs beside the weights.
type ExportOptions struct {
	// Tokenizer is the tokenizer.json to write (nil for none): a file
	// Hugging Face's tokenizers library reads, as data.Tokenizer.JSON gives.
	Tokenizer []byte
	// BOS and EOS are the tokenizer's special ids (-1: none).
	BOS, EOS int
	// Form is the transformers version whose config.json form to write
	// (model.HFForm5, the default when 0, or model.HFForm4).
	Form model.HFForm
	// TokenizerFiles are written beside tokenizer.json, by base name:
	// tokenizer_config.json and special_tokens_map.json of the Hugging
	// Face tokenizer the run used, which say what tokenizer.json does not
	// (the special tokens' roles, a chat template, model_max_length).
	TokenizerFiles map[string][]byte
}

// Export writes the memo checkpoint dir as a Hugging Face model directory
// out: config.json (its family's class, in the form opt.Form names),
// model.safetensors (already in Hugging Face's names and
// layout: copied byte for byte), tokenizer.json and generation_config.json.
// out must not exist; the directory is assembled under a temporary name
// and renamed, so a partial export is never mistaken for a finished one.
//
// ctx stops it between files and within the copy of the weights; the
// temporary directory is removed then, as on any failure.
func Export(ctx context.Context, dir, out string, opt ExportOptions) error {
	if _, ok := ReadLoRAState(dir); ok {
		return badinput.Errorf("%s is a LoRA checkpoint: it holds adapters, not a model; memo export --merge writes the base with them merged", dir)
	}
	return export(ctx, dir, out, opt, func(tmp string) error {
		return copyFile(ctx, filepath.Join(dir, ModelFile), filepath.Join(tmp, ModelFile))
	})
}

// ExportMerged is Export for the LoRA checkpoint dir: model.safetensors
// holds the base with the adapters merged in (W + (alpha/r)·B·A, PEFT's
// merge_and_unload), a plain model in Hugging Face's names and layout.
// The base must be where the checkpoint recorded it, unchanged.
func ExportMerged(ctx context.Context, dir, out string, opt ExportOptions) error {
	st, ok := ReadLoRAState(dir)
	if !ok {
		return badinput.Errorf("%s holds no LoRA adapters (no %s in its state.json): export it without --merge", dir, "lora_base")
	}
	if _, err := os.Stat(out); err == nil {
		return badinput.Errorf("%s exists; export writes a new directory", out)
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return badinput.Wrap(err)
	}
	vs := nn.NewVarStore(gotch.CPU)
	g, err := loadLoRA(vs, dir, cfg, st)
	if err != nil {
		return err
	}
	return export(ctx, dir, out, opt, func(tmp string) error {
		return WriteTensors(filepath.Join(tmp, ModelFile), ModelTensors(g), map[string]string{"format": "pt", "producer": "memo"})
	})
}

// export writes the Hugging Face directory out of the checkpoint dir,
// with weights writing model.safetensors into the temporary directory.
func export(ctx context.Context, dir, out string, opt ExportOptions, weights func(tmp string) error) error {
	if _, err := os.Stat(out); err == nil {
		return badinput.Errorf("%s exists; export writes a new directory", out)
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return badinput.Wrap(err)
	}
	form := opt.Form
	if form == 0 {
		form = model.HFForm5
	}
	// Refused before anything is made: OUT's parents too.
	if err := cfg.CheckExportable(form); err != nil {
		return badinput.Errorf("export %s: %v", dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(out)), 0o755); err != nil {
		return err
	}
	tmp, err := atomicfile.MkdirTemp(filepath.Dir(filepath.Clean(out)), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	hf := cfg.HFConfigForm(form)
	base := baseSpecialIDs(cfg, opt)
	gen := map[string]any{"do_sample": false}
	if base.gen != nil && (namesID(base.gen["eos_token_id"], opt.EOS) || namesID(base.config["eos_token_id"], opt.EOS)) {
		// The base's generation defaults, which a fine-tune with its
		// tokenizer keeps (its pad id, sampling settings).
		gen = maps.Clone(base.gen)
	}
	for key, id := range map[string]int{"bos_token_id": opt.BOS, "eos_token_id": opt.EOS} {
		if id >= 0 {
			hf[key], gen[key] = id, id
			if v, ok := base.config[key]; ok && namesID(v, id) {
				hf[key] = v
			}
			if v, ok := base.gen[key]; ok && namesID(v, id) {
				gen[key] = v
			}
		}
	}
	if err := writeJSON(filepath.Join(tmp, HFConfigFile), hf); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(tmp, HFGenerationConfigFile), gen); err != nil {
		return err
	}
	if err := weights(tmp); err != nil {
		return err
	}
	if opt.Tokenizer != nil {
		if err := atomicfile.WriteFileSync(filepath.Join(tmp, HFTokenizerFile), opt.Tokenizer); err != nil {
			return err
		}
		for name, b := range opt.TokenizerFiles {
			if name != filepath.Base(name) || name == HFTokenizerFile {
				return fmt.Errorf("export: tokenizer file %q: want a base name other than %s", name, HFTokenizerFile)
			}
			if err := atomicfile.WriteFileSync(filepath.Join(tmp, name), b); err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := atomicfile.RenameDir(tmp, out); err != nil {
		return err
	}
	syncDir(filepath.Dir(filepath.Clean(out)))
	return nil
}

// baseIDs are what the Hugging Face model a fine-tune started from
// (model.init_from) says of its special tokens: config.json's keys and
// generation_config.json's, nil where it has none.
type baseIDs struct{ config, gen map[string]any }

// baseSpecialIDs reads the base of cfg when it is a fine-tune of a Hugging
// Face model and the export has a tokenizer: an export of Llama 3.1 kept
// only the tokenizer's one <|end_of_text|> of the base's three eos ids, so
// generation no longer stopped at <|eot_id|>. A base that cannot be read
// (moved since) gives nothing: the export is as for a model trained here.
func baseSpecialIDs(cfg model.Config, opt ExportOptions) baseIDs {
	dir, ok := strings.CutPrefix(cfg.InitFrom, "hf:")
	if !ok || opt.Tokenizer == nil {
		return baseIDs{}
	}
	read := func(name string) map[string]any {
		var m map[string]any
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || json.Unmarshal(b, &m) != nil {
			return nil
		}
		return m
	}
	return baseIDs{config: read(HFConfigFile), gen: read(HFGenerationConfigFile)}
}

// namesID reports whether an id value of a Hugging Face config (a number,
// or a list of numbers: every token that ends a turn) names id; only then
// is the base's value kept, since a tokenizer that is not the base's
// numbers its tokens otherwise.
func namesID(v any, id int) bool {
	switch v := v.(type) {
	case float64:
		return v == float64(id)
	case []any:
		for _, e := range v {
			if f, ok := e.(float64); ok && f == float64(id) {
				return true
			}
		}
	}
	return false
}

func copyFile(ctx context.Context, from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, ctxReader{ctx, src}); err != nil {
		dst.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// ReadSource finds the weights a run starts from (train.init_from): a
// Hugging Face directory, or a memo run, checkpoints/ directory or
// checkpoint (its newest good one). It returns their directory and model.
// "hf:DIR" (extract.reference's form) must be a Hugging Face directory.
func ReadSource(path string) (string, model.Config, error) {
	if dir, ok := strings.CutPrefix(path, "hf:"); ok {
		c, err := ReadHFConfig(dir)
		if err == nil && !IsHFDir(dir) {
			err = fmt.Errorf("%s has a config.json but no %s or %s", dir, ModelFile, safetensors.IndexFile)
		}
		return dir, c, err
	}
	if IsHFDir(path) {
		c, err := ReadHFConfig(path)
		return path, c, err
	}
	dir, err := Resolve(path)
	if err != nil {
		return "", model.Config{}, err
	}
	c, err := ReadConfig(dir)
	return dir, c, err
}

// LoadSourceWeights fills g from a directory ReadSource returned.
func LoadSourceWeights(g *model.GPT, dir string) error {
	if IsHFDir(dir) {
		return LoadHFWeights(g, dir)
	}
	return LoadWeights(g, dir)
}

// ctxReader is a reader that fails with ctx's error once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
