package checkpoint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/model"
)

// PEFT's file names for a saved adapter (peft.utils.constants: CONFIG_NAME,
// SAFETENSORS_WEIGHTS_NAME), which PeftModel.from_pretrained reads.
const (
	PEFTConfigFile  = "adapter_config.json"
	PEFTWeightsFile = "adapter_model.safetensors"
)

// peftConfig is adapter_config.json as PEFT's LoraConfig writes it (the
// fields memo's adapters set; LoraConfig fills the rest with its defaults).
type peftConfig struct {
	PeftType          string   `json:"peft_type"`
	TaskType          string   `json:"task_type"`
	BaseModel         string   `json:"base_model_name_or_path"`
	R                 int      `json:"r"`
	LoraAlpha         float64  `json:"lora_alpha"`
	LoraDropout       float64  `json:"lora_dropout"`
	TargetModules     []string `json:"target_modules"`
	FanInFanOut       bool     `json:"fan_in_fan_out"`
	Bias              string   `json:"bias"`
	InferenceMode     bool     `json:"inference_mode"`
	InitLoraWeights   bool     `json:"init_lora_weights"`
	UseRSLoRA         bool     `json:"use_rslora"`
	UseDoRA           bool     `json:"use_dora"`
	ModulesToSave     []string `json:"modules_to_save"`
	LayersToTransform []int    `json:"layers_to_transform"`
	RankPattern       struct{} `json:"rank_pattern"`
	AlphaPattern      struct{} `json:"alpha_pattern"`
}

// SaveAdapter writes l's adapters into dir in PEFT's layout:
// adapter_config.json and adapter_model.safetensors with PEFT's tensor
// names (base_model.model.<module>.lora_A.weight, .lora_B.weight), so that
// peft.PeftModel.from_pretrained(base, dir) loads them onto base, the
// Hugging Face model baseModel names (written as base_model_name_or_path).
// Each file is written under a temporary name and renamed.
func SaveAdapter(dir string, l *model.LoRA, baseModel string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save adapter: %w", err)
	}
	opt := l.Options()
	conv1D := len(l.Sites()) > 0 && l.Sites()[0].Conv1D
	cfg := peftConfig{
		PeftType: "LORA", TaskType: "CAUSAL_LM", BaseModel: baseModel,
		R: opt.Rank, LoraAlpha: opt.Alpha, LoraDropout: opt.Dropout,
		TargetModules: opt.Targets, FanInFanOut: conv1D, Bias: "none",
		InferenceMode: true, InitLoraWeights: true,
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("save adapter: %w", err)
	}
	params := l.Params()
	named := make([]Named, len(params))
	for i, p := range params {
		named[i] = Named{Name: p.Name, Tensor: p.Tensor}
	}
	if err := WriteTensors(filepath.Join(dir, PEFTWeightsFile), named, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("save adapter: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, PEFTConfigFile), append(js, '\n')); err != nil {
		return fmt.Errorf("save adapter: %w", err)
	}
	return nil
}
