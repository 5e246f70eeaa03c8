package provenance

import (
	"encoding/json"
	"fmt"
)

// LoRA is the key of a LoRA checkpoint's adapter record (a LoRARecord as
// JSON); absent for a checkpoint of a whole model.
const LoRA = "memo.lora"

// LoRARecord names the model a LoRA checkpoint holds: adapters of rank
// Rank and scale Alpha on the modules Targets (PEFT's r, lora_alpha and
// target_modules), with digest AdaptersSHA256 (adapter_model.safetensors),
// added to the frozen base weights of BaseSource — empty for the model
// seed's own weights — whose digest is BaseSHA256. It is the one schema of
// completions.arrow's LoRA metadata and summary.json's "lora": a LoRA
// checkpoint has no model.safetensors, so model_sha256 is absent there
// and these digests name what was attacked.
type LoRARecord struct {
	Rank           int      `json:"rank"`
	Alpha          float64  `json:"alpha"`
	Targets        []string `json:"targets"`
	AdaptersSHA256 string   `json:"adapters_sha256"`
	BaseSource     string   `json:"base_source,omitempty"`
	BaseSHA256     string   `json:"base_sha256,omitempty"`
	BasePrecision  string   `json:"base_precision,omitempty"`
}

// ParseLoRA reads a LoRARecord from its JSON; nil for empty input.
func ParseLoRA(raw []byte) (*LoRARecord, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var r LoRARecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("LoRA record: %w", err)
	}
	return &r, nil
}
