package checkpoint

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/model"
)

// TestBigHFCheckpoint writes a TinyLlama-shaped (1.1 B parameters) random
// BF16 Llama checkpoint in two shards into $MEMO_BIG_CHECKPOINT and loads
// it, logging the load time and the peak RSS. Skipped unless the variable
// is set: it writes 2.2 GB and needs about 5 GB of memory.
//
//	MEMO_BIG_CHECKPOINT=/tmp/big go test -count=1 -run BigHF -v ./checkpoint/
//
// The directory then serves `memo score --model /tmp/big` for throughput.
func TestBigHFCheckpoint(t *testing.T) {
	dir := os.Getenv("MEMO_BIG_CHECKPOINT")
	if dir == "" {
		t.Skip("set MEMO_BIG_CHECKPOINT=DIR to write and load a 1.1 B-parameter checkpoint")
	}
	hf := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"vocab_size": 32000, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 22,
		"num_attention_heads": 32, "num_key_value_heads": 4, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
		"max_position_embeddings": 2048, "tie_word_embeddings": false, "hidden_act": "silu", "torch_dtype": "bfloat16",
	}
	raw, _ := json.Marshal(hf)
	cfg, err := model.FromHF(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors.index.json")); err != nil {
		t0 := time.Now()
		writeRandomShards(t, dir, cfg, raw)
		t.Logf("wrote %.2f B parameters as BF16 in %.1f s", float64(cfg.Params())/1e9, time.Since(t0).Seconds())
	}
	runtime.GC()
	before := peakRSS(t)
	t0 := time.Now()
	g, _, err := LoadHF(dir, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded %d parameters in %.1f s; peak RSS %.2f GB before loading, %.2f GB after (float32 weights: %.2f GB)",
		g.Config().Params(), time.Since(t0).Seconds(), before/1e9, peakRSS(t)/1e9, float64(4*g.Config().Params())/1e9)
}

// writeRandomShards writes N(0, 0.02) matrices and unit norms for cfg,
// the first half of the layers in one shard and the rest in another.
func writeRandomShards(t *testing.T, dir string, cfg model.Config, configJSON []byte) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	type spec struct {
		name  string
		shape []int64
	}
	d, f, v := int64(cfg.Dim), int64(cfg.FFN), int64(cfg.Vocab)
	q, kv := int64(cfg.Heads*cfg.HeadDim), int64(cfg.KVHeads*cfg.HeadDim)
	shards := [2][]spec{{{"model.embed_tokens.weight", []int64{v, d}}}, nil}
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		s := &shards[l*2/cfg.Layers]
		*s = append(*s, spec{p + "input_layernorm.weight", []int64{d}}, spec{p + "self_attn.q_proj.weight", []int64{q, d}},
			spec{p + "self_attn.k_proj.weight", []int64{kv, d}}, spec{p + "self_attn.v_proj.weight", []int64{kv, d}},
			spec{p + "self_attn.o_proj.weight", []int64{d, q}}, spec{p + "post_attention_layernorm.weight", []int64{d}},
			spec{p + "mlp.gate_proj.weight", []int64{f, d}}, spec{p + "mlp.up_proj.weight", []int64{f, d}},
			spec{p + "mlp.down_proj.weight", []int64{d, f}})
	}
	shards[1] = append(shards[1], spec{"model.norm.weight", []int64{d}}, spec{"lm_head.weight", []int64{v, d}})
	weightMap := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, specs := range shards {
		file := fmt.Sprintf("model-%05d-of-00002.safetensors", i+1)
		desc := make([]safetensors.Tensor, len(specs))
		for j, s := range specs {
			desc[j] = safetensors.Tensor{Name: s.name, DType: safetensors.BF16, Shape: s.shape}
			weightMap[s.name] = file
		}
		err := safetensors.Write(filepath.Join(dir, file), desc, map[string]string{"format": "pt"}, func(j int) ([]float32, error) {
			n := int64(1)
			for _, x := range specs[j].shape {
				n *= x
			}
			vals := make([]float32, n)
			norm := strings.HasSuffix(specs[j].name, "norm.weight")
			for k := range vals {
				if norm {
					vals[k] = 1
				} else {
					vals[k] = float32(rng.NormFloat64() * 0.02)
				}
			}
			return vals, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	for name, b := range map[string][]byte{"config.json": configJSON, "model.safetensors.index.json": index} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// peakRSS is this process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T) float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f", &kb)
			return kb * 1024
		}
	}
	return 0
}
