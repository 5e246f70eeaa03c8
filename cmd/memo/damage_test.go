package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The helpers here damage checkpoints and Hugging Face directories for the
// bad-input tests (models_test.go, damaged_test.go, contract_test.go): one
// way to read a safetensors header, to overwrite a weight and to edit a
// JSON file, so that every test's damage is the same damage.

// safetensorsHeader parses the header of a safetensors file's bytes b: one
// entry per tensor (dtype, shape, data_offsets) and __metadata__, and the
// position in b where the tensor data starts.
func safetensorsHeader(t *testing.T, b []byte) (header map[string]map[string]any, dataStart int) {
	t.Helper()
	n := binary.LittleEndian.Uint64(b[:8])
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &raw); err != nil {
		t.Fatal(err)
	}
	header = map[string]map[string]any{}
	for k, v := range raw {
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatal(err)
		}
		header[k] = m
	}
	return header, 8 + int(n)
}

// putFirstF32 writes v over the first value of tensor name (which must be
// F32), in data, the bytes after the header.
func putFirstF32(t *testing.T, header map[string]map[string]any, data []byte, name string, v float32) {
	t.Helper()
	info := header[name]
	offsets, _ := info["data_offsets"].([]any)
	if info["dtype"] != "F32" || len(offsets) != 2 {
		t.Fatalf("tensor %s: %v, want an F32 tensor", name, info)
	}
	binary.LittleEndian.PutUint32(data[int(offsets[0].(float64)):], math.Float32bits(v))
}

// editJSONFile reads the JSON object at path, lets edit change it and
// writes it back (writeJSONFile).
func editJSONFile(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(mustRead(t, path)), &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	writeJSONFile(t, path, v)
}

// truncateBy cuts the last n bytes off the file at path.
func truncateBy(t *testing.T, path string, n int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-n); err != nil {
		t.Fatal(err)
	}
}

// hfDamageWork is what a test that damages copies of a Hugging Face
// checkpoint starts from: the memo binary, the llama-gqa-tied golden to
// copy, and a work directory holding ids.json, three ids every model
// takes. Skipped under -short (it builds the binary).
func hfDamageWork(t *testing.T) (exe, src, work string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe = buildMemo(t)
	src, _ = hfGolden(t, "llama-gqa-tied")
	work = t.TempDir()
	writeJSONFile(t, filepath.Join(work, "ids.json"), [][]int32{{1, 2, 3}})
	return exe, src, work
}
