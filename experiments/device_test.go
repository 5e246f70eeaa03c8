package experiments

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
)

// TestDeviceInheritance: one device set at the top or in train reaches
// every stage that sets none; a stage's own wins.
func TestDeviceInheritance(t *testing.T) {
	tests := []struct {
		name, doc            string
		train, extract, what string
	}{
		{"unset", "name = \"x\"", "cpu", "", "the CPU everywhere"},
		{"top level", `device = "cuda:1"`, "cuda:1", "cuda:1", "every stage"},
		{"train only", "[train]\ndevice = \"cuda\"", "cuda", "cuda", "extraction follows training"},
		{"stage override", "device = \"cuda\"\n[extract]\ndevice = \"cpu\"", "cuda", "cpu", "extract keeps its own"},
		{"train overrides top", "device = \"cuda:1\"\n[train]\ndevice = \"cpu\"", "cpu", "cuda:1", "train keeps its own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseBytes("x.toml", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.ExtractStage().Device; s.Train.Device != tt.train || got != tt.extract {
				t.Errorf("train.device %q, extract stage on %q; want %q, %q (%s)", s.Train.Device, got, tt.train, tt.extract, tt.what)
			}
			// The rendered spec parses back to the same devices.
			out, err := s.Render()
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseBytes("x.toml", []byte(out))
			if err != nil {
				t.Fatal(err)
			}
			if back.Train.Device != s.Train.Device || back.Extract.Device != s.Extract.Device || back.Device != s.Device {
				t.Errorf("rendered and parsed back: devices %q/%q/%q, were %q/%q/%q", back.Device, back.Train.Device, back.Extract.Device, s.Device, s.Train.Device, s.Extract.Device)
			}
		})
	}
}

// TestCheckDevices: a device the process cannot use is a config error
// naming the key, and a misspelt one is refused at parse time.
func TestCheckDevices(t *testing.T) {
	if _, err := ParseBytes("x.toml", []byte(`device = "gpu"`)); err == nil || !strings.Contains(err.Error(), `device = "gpu"`) {
		t.Errorf("device = \"gpu\": err %v", err)
	}
	if _, err := ParseBytes("x.toml", []byte("[extract]\ndevice = \"cuda:-1\"")); err == nil || !strings.Contains(err.Error(), "extract.device") {
		t.Errorf("extract.device = \"cuda:-1\": err %v", err)
	}
	s, err := ParseBytes("x.toml", []byte(`device = "cpu"`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckDevices(); err != nil {
		t.Errorf("cpu: %v", err)
	}
	n := 0
	if gotch.CUDA.IsAvailable() {
		n = int(gotch.CUDA.DeviceCount())
	}
	for _, doc := range []string{"device = \"cuda:" + strconv.Itoa(n) + "\"", "[extract]\ndevice = \"cuda:" + strconv.Itoa(n) + "\""} {
		s, err := ParseBytes("x.toml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		err = s.CheckDevices()
		key := strings.SplitN(strings.TrimPrefix(doc, "[extract]\n"), " ", 2)[0]
		if strings.HasPrefix(doc, "[extract]") {
			key = "extract.device"
		}
		if err == nil || !strings.Contains(err.Error(), key+" = ") {
			t.Errorf("%s with %d GPUs: err %v, want one naming %s", doc, n, err, key)
		}
	}
}

// TestCheckDevicesLineUnderSet: a device refused after parsing is located
// in the file the user wrote, under --set as without (the rewritten
// document's line 1 was named), and in a sweep's file for its points.
func TestCheckDevicesLineUnderSet(t *testing.T) {
	n := 0
	if gotch.CUDA.IsAvailable() {
		n = int(gotch.CUDA.DeviceCount())
	}
	path := filepath.Join(t.TempDir(), "dev.toml")
	doc := "name = \"dev\"\n\n# a GPU past the last\n[extract]\ndevice = \"cuda:" + strconv.Itoa(n) + "\"\n[sweep]\n\"goldfish.k\" = [0, 4]\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sets := range [][]string{nil, {"train.lr=2e-3"}} {
		s, err := ParseWithOverrides(path, sets)
		if err != nil {
			t.Fatal(err)
		}
		points, err := s.Expand()
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range []*Spec{s, points[0].Spec} {
			var ce *ConfigError
			if err := spec.CheckDevices(); !errors.As(err, &ce) || ce.Line != 5 || ce.Key != "extract.device" {
				t.Errorf("--set %v: %v, want extract.device at line 5", sets, err)
			}
		}
	}
}
