package extract

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/model"
)

// A LoRA checkpoint's provenance names its adapters and base (it has no
// model.safetensors, so no model digest); a whole model's has no LoRA
// record.
func TestProvenanceLoRA(t *testing.T) {
	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lora := t.TempDir()
	write(lora, checkpoint.StateFile, `{"step": 6, "lora_base": {"source": "/runs/base/checkpoints/step-000040", "sha256": "b0b0"},
		"sha256": {"adapter_model.safetensors": "adad", "adapter_config.json": "cfcf"}}`)
	write(lora, checkpoint.PEFTConfigFile, `{"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}`)
	whole := t.TempDir()
	write(whole, checkpoint.StateFile, `{"step": 6, "sha256": {"model.safetensors": "abab"}}`)
	mc := model.Config{Preset: "nano", Vocab: 64}
	meta, err := provenanceOf(lora, mc, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := provenance.ParseLoRA([]byte(meta[provenance.LoRA]))
	want := &provenance.LoRARecord{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj"}, AdaptersSHA256: "adad",
		BaseSource: "/runs/base/checkpoints/step-000040", BaseSHA256: "b0b0"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LoRA record %+v (%v), want %+v", got, err, want)
	}
	if _, ok := meta[provenance.ModelSHA256]; ok {
		t.Errorf("a LoRA checkpoint has a model digest %q", meta[provenance.ModelSHA256])
	}
	meta, err = provenanceOf(whole, mc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := meta[provenance.LoRA]; ok || meta[provenance.ModelSHA256] != "abab" {
		t.Errorf("whole model's provenance %v: want its model digest and no LoRA record", meta)
	}
}
