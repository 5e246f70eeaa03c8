package model

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Hugging Face's config.json, both ways. FromHF reads LlamaForCausalLM
// (Llama 2/3/3.1/3.2, TinyLlama, SmolLM, Mistral without a sliding window)
// and GPTNeoXForCausalLM (Pythia); HFConfig writes one for a Config. Every
// key of the file must be understood: either it changes the computation
// and is mapped (or refused with its value), or it is known not to matter
// for a float32 forward pass (hfInert). Anything else is an error naming
// the key, so a model memo would compute differently never loads silently.

// hfInert are config.json keys that do not change what the network
// computes in memo: bookkeeping, token ids (the tokenizer's business),
// and settings of other runtimes.
var hfInert = map[string]bool{
	"_name_or_path": true, "architectures": true, "model_type": true, "transformers_version": true,
	"torch_dtype": true, "dtype": true, "bos_token_id": true, "eos_token_id": true, "pad_token_id": true,
	"initializer_range": true, "use_cache": true, "pretraining_tp": true, "tie_word_embeddings": true,
	"max_position_embeddings": true, "hidden_act": true, "vocab_size": true, "hidden_size": true,
	"intermediate_size": true, "num_hidden_layers": true, "num_attention_heads": true,
	"gradient_checkpointing": true, "output_attentions": true, "output_hidden_states": true,
	"return_dict": true, "is_decoder": true, "sep_token_id": true, "cls_token_id": true,
	"unk_token_id": true, "decoder_start_token_id": true, "torchscript": true, "task_specific_params": true,
	"auto_map": true, "keys_to_ignore_at_inference": true, "tokenizer_class": true, "chunk_size_feed_forward": true,
	"problem_type": true, "id2label": true, "label2id": true, "finetuning_task": true, "prefix": true,
	"layer_types": true,
}

// hfNumber reads an optional JSON number (a missing key or null gives def).
func hfNumber(raw map[string]json.RawMessage, key string, def float64) (float64, error) {
	msg, ok := raw[key]
	if !ok || string(msg) == "null" {
		return def, nil
	}
	var v float64
	if err := json.Unmarshal(msg, &v); err != nil {
		return 0, fmt.Errorf("config.json %s = %s: want a number", key, msg)
	}
	return v, nil
}

// hfInt reads an optional non-negative integer.
func hfInt(raw map[string]json.RawMessage, key string, def int) (int, error) {
	v, err := hfNumber(raw, key, float64(def))
	if err != nil {
		return 0, err
	}
	if v < 0 || v != float64(int(v)) {
		return 0, fmt.Errorf("config.json %s = %v: want a non-negative integer", key, v)
	}
	return int(v), nil
}

func hfBool(raw map[string]json.RawMessage, key string, def bool) (bool, error) {
	msg, ok := raw[key]
	if !ok || string(msg) == "null" {
		return def, nil
	}
	var v bool
	if err := json.Unmarshal(msg, &v); err != nil {
		return false, fmt.Errorf("config.json %s = %s: want true or false", key, msg)
	}
	return v, nil
}

func hfString(raw map[string]json.RawMessage, key, def string) (string, error) {
	msg, ok := raw[key]
	if !ok || string(msg) == "null" {
		return def, nil
	}
	var v string
	if err := json.Unmarshal(msg, &v); err != nil {
		return "", fmt.Errorf("config.json %s = %s: want a string", key, msg)
	}
	return v, nil
}

// FromHF maps a Hugging Face config.json to a resolved Config. The result
// has no preset; Context is max_position_embeddings and DType the stored
// torch_dtype (float32 when absent).
func FromHF(configJSON []byte) (Config, error) {
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(configJSON, &raw); err != nil {
		return Config{}, fmt.Errorf("config.json is not a JSON object: %w", err)
	}
	modelType, err := hfString(raw, "model_type", "")
	if err != nil {
		return Config{}, err
	}
	var archs []string
	if msg, ok := raw["architectures"]; ok && string(msg) != "null" {
		if err := json.Unmarshal(msg, &archs); err != nil {
			return Config{}, fmt.Errorf("config.json architectures = %s: want a list of names", msg)
		}
	}
	for _, a := range archs {
		if a != "LlamaForCausalLM" && a != "MistralForCausalLM" && a != "GPTNeoXForCausalLM" {
			return Config{}, fmt.Errorf("config.json architectures = %v: memo imports LlamaForCausalLM, MistralForCausalLM (no sliding window) and GPTNeoXForCausalLM", archs)
		}
	}
	var c Config
	used := map[string]bool{}
	switch modelType {
	case "llama", "mistral":
		c, err = fromHFLlama(raw, used)
	case "gpt_neox":
		c, err = fromHFNeoX(raw, used)
	default:
		return Config{}, fmt.Errorf("config.json model_type = %q: memo imports llama, mistral and gpt_neox", modelType)
	}
	if err != nil {
		return Config{}, err
	}
	if c.Vocab, err = hfInt(raw, "vocab_size", 0); err != nil {
		return Config{}, err
	}
	for key, dst := range map[string]*int{"hidden_size": &c.Dim, "intermediate_size": &c.FFN,
		"num_hidden_layers": &c.Layers, "num_attention_heads": &c.Heads} {
		if *dst, err = hfInt(raw, key, 0); err != nil {
			return Config{}, err
		}
		if *dst == 0 {
			return Config{}, fmt.Errorf("config.json has no %s", key)
		}
	}
	if c.Context, err = hfInt(raw, "max_position_embeddings", 2048); err != nil {
		return Config{}, err
	}
	tied, err := hfBool(raw, "tie_word_embeddings", false) // both classes default to untied
	if err != nil {
		return Config{}, err
	}
	c.Untied = !tied
	dtype, err := hfString(raw, "torch_dtype", "")
	if err != nil {
		return Config{}, err
	}
	if dtype == "" {
		if dtype, err = hfString(raw, "dtype", "float32"); err != nil {
			return Config{}, err
		}
	}
	c.DType = dtype
	for _, key := range []string{"attention_dropout", "hidden_dropout", "attention_probs_dropout_prob", "hidden_dropout_prob", "classifier_dropout"} {
		used[key] = true
		if v, err := hfNumber(raw, key, 0); err != nil {
			return Config{}, err
		} else if v != 0 {
			return Config{}, fmt.Errorf("config.json %s = %v: memo trains without dropout; set it to 0 to import", key, v)
		}
	}
	var unknown []string
	for key := range raw {
		if !used[key] && !hfInert[key] {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Config{}, fmt.Errorf("config.json: memo does not know the key(s) %s; it refuses to import a model it might compute differently", strings.Join(unknown, ", "))
	}
	r, err := c.Resolve()
	if err != nil {
		return Config{}, fmt.Errorf("config.json: %w", err)
	}
	return r, nil
}

func fromHFLlama(raw map[string]json.RawMessage, used map[string]bool) (Config, error) {
	c := Config{Arch: ArchLlama}
	var err error
	for _, k := range []string{"num_key_value_heads", "head_dim", "rms_norm_eps", "rope_theta", "attention_bias", "mlp_bias", "rope_scaling", "sliding_window", "use_sliding_window", "max_window_layers"} {
		used[k] = true
	}
	if act, err := hfString(raw, "hidden_act", "silu"); err != nil {
		return c, err
	} else if act != "silu" {
		return c, fmt.Errorf("config.json hidden_act = %q: memo's llama MLP is SwiGLU (silu)", act)
	}
	if c.KVHeads, err = hfInt(raw, "num_key_value_heads", 0); err != nil {
		return c, err
	}
	if c.HeadDim, err = hfInt(raw, "head_dim", 0); err != nil {
		return c, err
	}
	if c.NormEps, err = hfNumber(raw, "rms_norm_eps", 1e-6); err != nil { // LlamaConfig's default
		return c, err
	}
	if c.RopeTheta, err = hfNumber(raw, "rope_theta", 10000); err != nil {
		return c, err
	}
	if c.Bias, err = hfBool(raw, "attention_bias", false); err != nil {
		return c, err
	}
	if mlpBias, err := hfBool(raw, "mlp_bias", false); err != nil {
		return c, err
	} else if mlpBias {
		return c, fmt.Errorf("config.json mlp_bias = true: memo's llama MLP has no biases")
	}
	if msg, ok := raw["sliding_window"]; ok && string(msg) != "null" {
		on, err := hfBool(raw, "use_sliding_window", true)
		if err != nil {
			return c, err
		}
		if on {
			return c, fmt.Errorf("config.json sliding_window = %s: memo attends to the whole context (set it to null for a model trained without a window)", msg)
		}
	}
	if msg, ok := raw["rope_scaling"]; ok && string(msg) != "null" {
		var rs map[string]any
		if err := json.Unmarshal(msg, &rs); err != nil {
			return c, fmt.Errorf("config.json rope_scaling = %s: want an object", msg)
		}
		kind, _ := rs["rope_type"].(string)
		if kind == "" {
			kind, _ = rs["type"].(string)
		}
		if kind != "llama3" {
			return c, fmt.Errorf("config.json rope_scaling type %q: memo implements llama3 only", kind)
		}
		num := func(k string) (float64, error) {
			v, ok := rs[k].(float64)
			if !ok {
				return 0, fmt.Errorf("config.json rope_scaling.%s = %v: want a number", k, rs[k])
			}
			return v, nil
		}
		c.RopeScaling = "llama3"
		if c.RopeFactor, err = num("factor"); err != nil {
			return c, err
		}
		if c.RopeLowFreqFactor, err = num("low_freq_factor"); err != nil {
			return c, err
		}
		if c.RopeHighFreqFactor, err = num("high_freq_factor"); err != nil {
			return c, err
		}
		orig, err := num("original_max_position_embeddings")
		if err != nil {
			return c, err
		}
		c.RopeOriginalContext = int(orig)
		for k := range rs {
			switch k {
			case "rope_type", "type", "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings":
			default:
				return c, fmt.Errorf("config.json rope_scaling.%s: memo does not know this llama3 rope key", k)
			}
		}
	}
	return c, nil
}

func fromHFNeoX(raw map[string]json.RawMessage, used map[string]bool) (Config, error) {
	c := Config{Arch: ArchGPTNeoX}
	var err error
	for _, k := range []string{"rotary_pct", "partial_rotary_factor", "rotary_emb_base", "rope_theta", "rope_parameters", "rope_scaling",
		"layer_norm_eps", "use_parallel_residual", "attention_bias"} {
		used[k] = true
	}
	if act, err := hfString(raw, "hidden_act", "gelu"); err != nil {
		return c, err
	} else if act != "gelu" {
		return c, fmt.Errorf("config.json hidden_act = %q: memo's gpt_neox MLP uses exact GELU (gelu)", act)
	}
	// Key names drift between transformers versions: accept each spelling.
	if c.RotaryPct, err = hfNumber(raw, "rotary_pct", 0); err != nil {
		return c, err
	}
	if c.RotaryPct == 0 {
		if c.RotaryPct, err = hfNumber(raw, "partial_rotary_factor", 0.25); err != nil { // GPTNeoXConfig's default
			return c, err
		}
	}
	if c.RopeTheta, err = hfNumber(raw, "rotary_emb_base", 0); err != nil {
		return c, err
	}
	if c.RopeTheta == 0 {
		if c.RopeTheta, err = hfNumber(raw, "rope_theta", 10000); err != nil {
			return c, err
		}
	}
	if msg, ok := raw["rope_parameters"]; ok && string(msg) != "null" {
		var rp map[string]any
		if err := json.Unmarshal(msg, &rp); err != nil {
			return c, fmt.Errorf("config.json rope_parameters = %s: want an object", msg)
		}
		for k, v := range rp {
			switch k {
			case "rope_theta":
				if f, ok := v.(float64); ok {
					c.RopeTheta = f
				}
			case "partial_rotary_factor":
				if f, ok := v.(float64); ok {
					c.RotaryPct = f
				}
			case "rope_type", "type":
				if v != "default" {
					return c, fmt.Errorf("config.json rope_parameters.%s = %v: memo implements default rotary for gpt_neox", k, v)
				}
			default:
				return c, fmt.Errorf("config.json rope_parameters.%s: memo does not know this key", k)
			}
		}
	}
	if msg, ok := raw["rope_scaling"]; ok && string(msg) != "null" {
		return c, fmt.Errorf("config.json rope_scaling = %s: memo implements no rope scaling for gpt_neox", msg)
	}
	if c.NormEps, err = hfNumber(raw, "layer_norm_eps", 1e-5); err != nil {
		return c, err
	}
	if c.ParallelResidual, err = hfBool(raw, "use_parallel_residual", true); err != nil {
		return c, err
	}
	if bias, err := hfBool(raw, "attention_bias", true); err != nil {
		return c, err
	} else if !bias {
		return c, fmt.Errorf("config.json attention_bias = false: memo's gpt_neox attention always has biases")
	}
	return c, nil
}

// HFConfig is the Hugging Face config.json of c: LlamaForCausalLM or
// GPTNeoXForCausalLM with every field that determines the computation, so
// that transformers' from_pretrained builds the same network.
func (c Config) HFConfig() map[string]any {
	out := map[string]any{
		"vocab_size": c.Vocab, "hidden_size": c.Dim, "intermediate_size": c.FFN,
		"num_hidden_layers": c.Layers, "num_attention_heads": c.Heads,
		"max_position_embeddings": c.Context, "tie_word_embeddings": !c.Untied,
		"torch_dtype": "float32", "initializer_range": initStdDev,
	}
	if c.Arch == ArchGPTNeoX {
		out["architectures"] = []string{"GPTNeoXForCausalLM"}
		out["model_type"] = "gpt_neox"
		out["rotary_pct"] = c.RotaryPct
		out["rotary_emb_base"] = c.RopeTheta
		out["layer_norm_eps"] = c.NormEps
		out["use_parallel_residual"] = c.ParallelResidual
		out["hidden_act"] = "gelu"
		out["attention_bias"] = true
		return out
	}
	out["architectures"] = []string{"LlamaForCausalLM"}
	out["model_type"] = "llama"
	out["num_key_value_heads"] = c.KVHeads
	out["head_dim"] = c.HeadDim
	out["rms_norm_eps"] = c.NormEps
	out["rope_theta"] = c.RopeTheta
	out["hidden_act"] = "silu"
	out["attention_bias"] = c.Bias
	out["mlp_bias"] = false
	out["rope_scaling"] = nil
	if c.RopeScaling == "llama3" {
		out["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": c.RopeFactor,
			"low_freq_factor": c.RopeLowFreqFactor, "high_freq_factor": c.RopeHighFreqFactor,
			"original_max_position_embeddings": c.RopeOriginalContext}
	}
	return out
}
