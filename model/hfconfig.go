package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
)

// Hugging Face's config.json, both ways. FromHF reads the families that
// registered an Arch, in transformers 5's form (rope_parameters, dtype) or
// 4's (rope_theta, rope_scaling, torch_dtype); Config.HFConfig writes one.
// Every key of the file must be understood: either it changes the
// computation and the family maps it (or refuses its value), or it is
// known not to change a causal LM's forward pass (hfInert). Anything else
// is an error naming the key, so a model memo would compute differently
// never loads silently.

// hfInert are config.json keys that do not change what a causal LM
// computes: bookkeeping, token ids (the tokenizer's business), settings of
// other runtimes and heads memo never builds, and dropout, which is off at
// inference (memo fine-tunes without dropout whatever these say).
var hfInert = map[string]bool{
	"_name_or_path": true, "architectures": true, "model_type": true, "transformers_version": true,
	"torch_dtype": true, "dtype": true, "bos_token_id": true, "eos_token_id": true, "pad_token_id": true,
	"initializer_range": true, "use_cache": true, "pretraining_tp": true,
	"gradient_checkpointing": true, "output_attentions": true, "output_hidden_states": true,
	"return_dict": true, "sep_token_id": true, "cls_token_id": true,
	"unk_token_id": true, "decoder_start_token_id": true, "torchscript": true, "task_specific_params": true,
	"auto_map": true, "keys_to_ignore_at_inference": true, "tokenizer_class": true, "chunk_size_feed_forward": true,
	"problem_type": true, "id2label": true, "label2id": true, "finetuning_task": true, "prefix": true,
	"is_decoder":        true,
	"attention_dropout": true, "hidden_dropout": true, "attention_probs_dropout_prob": true,
	"hidden_dropout_prob": true, "classifier_dropout": true, "attn_pdrop": true, "embd_pdrop": true,
	"resid_pdrop": true, "embed_dropout": true, "resid_dropout": true,
	"summary_activation": true, "summary_first_dropout": true, "summary_proj_to_labels": true,
	"summary_type": true, "summary_use_proj": true, "initializer_factor": true,
}

// hfReader reads config.json's keys, remembering which it used.
type hfReader struct {
	raw  map[string]json.RawMessage
	used map[string]bool
}

// absentDefault is def where config.json leaves key out, and 0 where it
// holds it (null included): transformers' configs default sliding_window
// to 4096 when it is absent, and an explicit null turns the window off.
func absentDefault(h *hfReader, key string, def int) int {
	if _, ok := h.raw[key]; ok {
		return 0
	}
	return def
}

// set reports whether key is present and not null, and marks it used.
func (h *hfReader) set(key string) bool {
	h.used[key] = true
	msg, ok := h.raw[key]
	return ok && string(msg) != "null"
}

// text is key's value as an error message quotes it: on one line (the
// file's own indentation and newlines compacted away) and cut to 60 bytes,
// so that a misplaced object or long list does not fill the terminal.
func (h *hfReader) text(key string) string {
	raw := h.raw[key]
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		raw = b.Bytes()
	}
	if len(raw) > 60 {
		return string(raw[:57]) + "..."
	}
	return string(raw)
}

// num reads an optional JSON number (a missing key or null gives def).
func (h *hfReader) num(key string, def float64) (float64, error) {
	if !h.set(key) {
		return def, nil
	}
	var v float64
	if err := json.Unmarshal(h.raw[key], &v); err != nil {
		return 0, fmt.Errorf("config.json %s = %s: want a number", key, h.text(key))
	}
	return v, nil
}

// positive reads an optional number that must be finite and above 0 when
// present: a 0 there would not be computed as written — memo's Resolve
// takes a zero norm eps, rope base or rotary fraction for "unset" and puts
// the default in its place, so the model would silently differ from the
// file.
func (h *hfReader) positive(key string, def float64) (float64, error) {
	v, err := h.num(key, def)
	if err == nil && h.set(key) && !(v > 0 && !math.IsInf(v, 0)) {
		return 0, fmt.Errorf("config.json %s = %s: must be a positive number", key, h.text(key))
	}
	return v, err
}

// optional reads a number whose null means "off" (0) and whose absence
// means the family's default def (Gemma's soft-capping keys).
func (h *hfReader) optional(key string, def float64) (float64, error) {
	if msg, ok := h.raw[key]; ok && string(msg) == "null" {
		h.used[key] = true
		return 0, nil
	}
	return h.num(key, def)
}

// integer reads an optional non-negative integer.
func (h *hfReader) integer(key string, def int) (int, error) {
	v, err := h.num(key, float64(def))
	if err != nil {
		return 0, err
	}
	if v < 0 || v != float64(int(v)) || v > 1<<40 {
		return 0, fmt.Errorf("config.json %s = %v: want a non-negative integer", key, v)
	}
	return int(v), nil
}

func (h *hfReader) boolean(key string, def bool) (bool, error) {
	if !h.set(key) {
		return def, nil
	}
	var v bool
	if err := json.Unmarshal(h.raw[key], &v); err != nil {
		return false, fmt.Errorf("config.json %s = %s: want true or false", key, h.text(key))
	}
	return v, nil
}

func (h *hfReader) str(key, def string) (string, error) {
	if !h.set(key) {
		return def, nil
	}
	var v string
	if err := json.Unmarshal(h.raw[key], &v); err != nil {
		return "", fmt.Errorf("config.json %s = %s: want a string", key, h.text(key))
	}
	return v, nil
}

// maxHFLayers bounds a config.json's layer count: the families build
// per-layer lists (layer_types) from it before any memory check, so a
// small file naming 2^40 layers would otherwise allocate terabytes.
// Released models have at most a few hundred layers.
const maxHFLayers = 1 << 16

// hfLayerKeys are the layer count's keys, in each family's spelling.
var hfLayerKeys = map[string]bool{"num_hidden_layers": true, "num_layers": true, "n_layer": true}

// ints reads several integer keys; a required one (def < 0) must be > 0,
// and a layer count at most maxHFLayers.
func (h *hfReader) ints(keys map[string]*int, defs map[string]int) error {
	for key, dst := range keys {
		def, optional := defs[key]
		v, err := h.integer(key, max(def, 0))
		if err != nil {
			return err
		}
		if hfLayerKeys[key] && v > maxHFLayers {
			return fmt.Errorf("config.json %s = %d: memo reads at most %d layers", key, v, maxHFLayers)
		}
		if v == 0 && !optional {
			return fmt.Errorf("config.json has no %s", key)
		}
		*dst = v
	}
	return nil
}

// activation reads the activation key, which must name one of want.
func (h *hfReader) activation(key, def string, want ...string) error {
	v, err := h.str(key, def)
	if err != nil {
		return err
	}
	for _, w := range want {
		if v == w {
			return nil
		}
	}
	return fmt.Errorf("config.json %s = %q: this family computes %s", key, v, strings.Join(want, " or "))
}

// refuse fails when key is set to anything but one of the values a plain
// causal LM has (compared as JSON text).
func (h *hfReader) refuse(key, why string, ok ...string) error {
	if !h.set(key) {
		return nil
	}
	got := string(h.raw[key])
	for _, o := range ok {
		if got == o {
			return nil
		}
	}
	return fmt.Errorf("config.json %s = %s: %s", key, h.text(key), why)
}

// tied reads tie_word_embeddings into c.Untied.
func (h *hfReader) tied(c *Config, def bool) error {
	tied, err := h.boolean("tie_word_embeddings", def)
	c.Untied = !tied
	return err
}

// layerTypes reads a per-layer list of attention kinds (key, e.g.
// layer_types) into c.LayerTypes; local and global are GPT-Neo's names.
func (h *hfReader) layerTypes(c *Config, key string) error {
	if !h.set(key) {
		return nil
	}
	var kinds []string
	if err := json.Unmarshal(h.raw[key], &kinds); err != nil {
		return fmt.Errorf("config.json %s = %s: want a list of strings", key, h.text(key))
	}
	out := make([]string, len(kinds))
	for i, k := range kinds {
		switch k {
		case "full_attention", "global":
			out[i] = "full"
		case "sliding_attention", "local":
			out[i] = "sliding"
		default:
			return fmt.Errorf("config.json %s[%d] = %q: memo knows full_attention and sliding_attention (global and local)", key, i, k)
		}
	}
	c.LayerTypes = strings.Join(out, ",")
	return nil
}

// ropeOptions say what a family's rotary embedding accepts.
type ropeOptions struct {
	theta   float64  // the default base
	partial bool     // partial_rotary_factor is meaningful
	scaling []string // rope types other than default it implements
}

// rope reads the rotary settings in either form: transformers 5's
// rope_parameters {rope_type, rope_theta, partial_rotary_factor, scaling
// keys}, or 4's rope_theta, rope_scaling and partial_rotary_factor.
func (h *hfReader) rope(c *Config, o ropeOptions) error {
	var err error
	if c.RopeTheta, err = h.positive("rope_theta", o.theta); err != nil {
		return err
	}
	if o.partial {
		if c.RotaryPct, err = h.positive("partial_rotary_factor", 1); err != nil {
			return err
		}
	}
	if h.set("rope_scaling") {
		var rs map[string]any
		if err := json.Unmarshal(h.raw["rope_scaling"], &rs); err != nil {
			return fmt.Errorf("config.json rope_scaling = %s: want an object", h.text("rope_scaling"))
		}
		if err := ropeParams(c, "rope_scaling", rs, o); err != nil {
			return err
		}
	}
	if h.set("rope_parameters") {
		var rp map[string]any
		if err := json.Unmarshal(h.raw["rope_parameters"], &rp); err != nil {
			return fmt.Errorf("config.json rope_parameters = %s: want an object", h.text("rope_parameters"))
		}
		if err := ropeParams(c, "rope_parameters", rp, o); err != nil {
			return err
		}
	}
	return nil
}

// ropeParams maps one rope_parameters (or rope_scaling) object.
func ropeParams(c *Config, key string, p map[string]any, o ropeOptions) error {
	kind, _ := p["rope_type"].(string)
	if kind == "" {
		kind, _ = p["type"].(string)
	}
	if kind == "" {
		kind = "default"
	}
	num := func(k string) (float64, error) {
		v, ok := p[k].(float64)
		if !ok {
			return 0, fmt.Errorf("config.json %s.%s = %v: want a number", key, k, p[k])
		}
		if !(v > 0 && !math.IsInf(v, 0)) {
			// Every rope number is a base, factor or length: 0 would be
			// taken for unset and replaced by a default.
			return 0, fmt.Errorf("config.json %s.%s = %v: must be a positive number", key, k, v)
		}
		return v, nil
	}
	var err error
	known := map[string]bool{"rope_type": true, "type": true, "rope_theta": true}
	if _, ok := p["rope_theta"]; ok {
		if c.RopeTheta, err = num("rope_theta"); err != nil {
			return err
		}
	}
	if _, ok := p["partial_rotary_factor"]; ok {
		if !o.partial {
			return fmt.Errorf("config.json %s.partial_rotary_factor: this family rotates whole heads", key)
		}
		known["partial_rotary_factor"] = true
		if c.RotaryPct, err = num("partial_rotary_factor"); err != nil {
			return err
		}
	}
	switch {
	case kind == "default":
	case kind == "linear" && has(o.scaling, kind):
		c.RopeScaling = kind
		known["factor"] = true
		if c.RopeFactor, err = num("factor"); err != nil {
			return err
		}
	case kind == "llama3" && has(o.scaling, kind):
		c.RopeScaling = kind
		for k, dst := range map[string]*float64{"factor": &c.RopeFactor, "low_freq_factor": &c.RopeLowFreqFactor, "high_freq_factor": &c.RopeHighFreqFactor} {
			known[k] = true
			if *dst, err = num(k); err != nil {
				return err
			}
		}
		known["original_max_position_embeddings"] = true
		orig, err := num("original_max_position_embeddings")
		if err != nil {
			return err
		}
		c.RopeOriginalContext = int(orig)
	default:
		implemented := append([]string{"default"}, o.scaling...)
		return fmt.Errorf("config.json %s rope_type %q: memo implements %s for this family", key, kind, strings.Join(implemented, ", "))
	}
	for k := range p {
		if !known[k] {
			return fmt.Errorf("config.json %s.%s: memo does not know this %s rope key", key, k, kind)
		}
	}
	return nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FromHF maps a Hugging Face config.json to a resolved Config. The result
// has no preset; Context is max_position_embeddings (or the family's name
// for it) and DType the stored dtype (float32 when absent).
func FromHF(configJSON []byte) (Config, error) {
	h := &hfReader{raw: map[string]json.RawMessage{}, used: map[string]bool{}}
	if err := json.Unmarshal(configJSON, &h.raw); err != nil {
		return Config{}, fmt.Errorf("config.json is not a JSON object: %w", err)
	}
	modelType, err := h.str("model_type", "")
	if err != nil {
		return Config{}, err
	}
	a, ok := archForModelType(modelType)
	if !ok {
		return Config{}, fmt.Errorf("config.json model_type = %q: memo imports %s", modelType, modelTypes())
	}
	if h.set("architectures") {
		var classes []string
		if err := json.Unmarshal(h.raw["architectures"], &classes); err != nil {
			return Config{}, fmt.Errorf("config.json architectures = %s: want a list of names", h.text("architectures"))
		}
		for _, cl := range classes {
			if cl != a.Class {
				return Config{}, fmt.Errorf("config.json architectures = %v: memo builds %s for model_type %q (a causal LM head only)", classes, a.Class, modelType)
			}
		}
	}
	c, err := a.FromHF(h)
	if err != nil {
		return Config{}, err
	}
	c.Arch = a.Name
	if c.DType, err = h.str("torch_dtype", ""); err != nil {
		return Config{}, err
	}
	if c.DType == "" {
		if c.DType, err = h.str("dtype", "float32"); err != nil {
			return Config{}, err
		}
	}
	var unknown []string
	for key := range h.raw {
		if !h.used[key] && !hfInert[key] {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Config{}, fmt.Errorf("config.json: memo does not know the key(s) %s of model_type %q; it refuses to import a model it might compute differently", strings.Join(unknown, ", "), modelType)
	}
	r, err := c.Resolve()
	if err != nil {
		file := map[string]bool{}
		for k := range h.raw {
			file[k] = true
		}
		return Config{}, fmt.Errorf("config.json: %s", hfNames(c, err.Error(), file))
	}
	return r, nil
}

// CheckExportable refuses a config whose family's config.json cannot say
// all of it: each family's ToHF writes its own keys, so a llama with a
// sliding window or softcaps, a mistral with biases or a gpt_neox with
// its own head_dim was exported as another network (re-imported, its
// NLLs moved from 5.5971 to 5.6602). The config must come back from its
// config.json the same network; the error names the fields that do not.
func (c Config) CheckExportable(form HFForm) error {
	b, err := json.Marshal(c.HFConfigForm(form))
	if err != nil {
		return err
	}
	back, err := FromHF(b)
	if err != nil {
		return fmt.Errorf("arch %s: its config.json would not load again: %w", c.Arch, err)
	}
	if back.SameNetwork(c) {
		return nil
	}
	var diff []string
	have, got := reflect.ValueOf(c.canonical()), reflect.ValueOf(back.canonical())
	for i := range have.NumField() {
		f := have.Type().Field(i)
		if !reflect.DeepEqual(have.Field(i).Interface(), got.Field(i).Interface()) {
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			diff = append(diff, fmt.Sprintf("model.%s = %v (its config.json says %v)", name, have.Field(i).Interface(), got.Field(i).Interface()))
		}
	}
	return fmt.Errorf("arch %s's config.json cannot express %s: transformers would build another model (a model.arch whose config.json has these settings exports them)", c.Arch, strings.Join(diff, ", "))
}

// HFConfig is the Hugging Face config.json of c in transformers 5's form.
func (c Config) HFConfig() map[string]any { return c.HFConfigForm(HFForm5) }

// HFConfigForm is the config.json of c in the given form, with every field
// that determines the computation, so that transformers' from_pretrained
// builds the same network.
func (c Config) HFConfigForm(form HFForm) map[string]any {
	a := archs[c.Arch]
	out := map[string]any{
		"architectures": []string{a.Class}, "model_type": a.ModelTypes[0],
		"tie_word_embeddings": !c.Untied, "initializer_range": initStdDev,
	}
	if form == HFForm4 {
		out["torch_dtype"] = "float32"
	} else {
		out["dtype"] = "float32"
	}
	a.ToHF(c, out, form)
	return out
}

// llamaSizes are the size keys most families share.
func llamaSizes(h *hfReader, c *Config) error {
	return h.ints(map[string]*int{"vocab_size": &c.Vocab, "hidden_size": &c.Dim, "intermediate_size": &c.FFN,
		"num_hidden_layers": &c.Layers, "num_attention_heads": &c.Heads, "num_key_value_heads": &c.KVHeads,
		"head_dim": &c.HeadDim, "max_position_embeddings": &c.Context},
		map[string]int{"num_key_value_heads": 0, "head_dim": 0, "max_position_embeddings": 2048})
}

// writeLlamaSizes writes llamaSizes' keys.
func writeLlamaSizes(c Config, out map[string]any) {
	for k, v := range map[string]int{"vocab_size": c.Vocab, "hidden_size": c.Dim, "intermediate_size": c.FFN,
		"num_hidden_layers": c.Layers, "num_attention_heads": c.Heads, "num_key_value_heads": c.KVHeads,
		"head_dim": c.HeadDim, "max_position_embeddings": c.Context} {
		out[k] = v
	}
}

// writeRope writes the rotary settings in the form asked; partial adds
// partial_rotary_factor (inside rope_parameters in form 5, at the top in 4).
func writeRope(c Config, out map[string]any, form HFForm, partial bool) {
	params := map[string]any{}
	switch c.RopeScaling {
	case "linear":
		params = map[string]any{"rope_type": "linear", "factor": c.RopeFactor}
	case "llama3":
		params = map[string]any{"rope_type": "llama3", "factor": c.RopeFactor,
			"low_freq_factor": c.RopeLowFreqFactor, "high_freq_factor": c.RopeHighFreqFactor,
			"original_max_position_embeddings": c.RopeOriginalContext}
	}
	if form == HFForm4 {
		out["rope_theta"] = c.RopeTheta
		out["rope_scaling"] = nil
		if len(params) > 0 {
			out["rope_scaling"] = params
		}
		if partial {
			out["partial_rotary_factor"] = c.RotaryPct
		}
		return
	}
	if len(params) == 0 {
		params["rope_type"] = "default"
	}
	params["rope_theta"] = c.RopeTheta
	if partial {
		params["partial_rotary_factor"] = c.RotaryPct
	}
	out["rope_parameters"] = params
}

// writeLayerTypes writes c's layer types under key, in transformers'
// words (full_attention, sliding_attention), or nothing when uniform full.
func writeLayerTypes(c Config, out map[string]any, key string, full, sliding string) {
	types := make([]string, c.Layers)
	for i, w := range c.windows() {
		types[i] = full
		if w > 0 {
			types[i] = sliding
		}
	}
	out[key] = types
}
