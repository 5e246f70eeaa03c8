package train

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func TestSafetensorsRoundTripAndLayout(t *testing.T) {
	a := ts.MustOfSlice([]float32{1, 2, 3, 4, 5, 6}).MustView([]int64{2, 3}, true)
	b := ts.MustOfSlice([]float32{-1.5}).MustView([]int64{1}, true)
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := writeSafetensors(path, []namedTensor{{"a.weight", a}, {"b", b}}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	n := binary.LittleEndian.Uint64(raw[:8])
	if n%8 != 0 || int(8+n+28) != len(raw) {
		t.Fatalf("header length %d (file %d bytes): want a multiple of 8 and 28 data bytes", n, len(raw))
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	var e stEntry
	json.Unmarshal(hdr["a.weight"], &e)
	if e.DType != "F32" || len(e.Shape) != 2 || e.Shape[0] != 2 || e.Shape[1] != 3 || e.Offsets != [2]int{0, 24} {
		t.Errorf("header entry of a.weight %+v, want F32 [2 3] at [0 24]", e)
	}
	if binary.LittleEndian.Uint32(raw[8+n+24:]) != 0xbfc00000 { // -1.5
		t.Errorf("b's data is not little-endian float32 -1.5")
	}
	got, meta, err := readSafetensors(path)
	if err != nil || meta["format"] != "pt" || len(got) != 2 {
		t.Fatalf("read back: %v %v %d", err, meta, len(got))
	}
	dst := ts.MustZeros([]int64{2, 3}, gotch.Float, gotch.CPU)
	if err := copyInto(dst, "a.weight", got["a.weight"]); err != nil || !dst.MustEqual(a, false) {
		t.Fatalf("round trip of a.weight: %v", err)
	}
	if err := copyInto(dst, "b", got["b"]); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("copying a [1] tensor into [2 3]: %v, want a shape error", err)
	}
	for _, cut := range []int{4, 8 + int(n) - 3, len(raw) - 1} {
		os.WriteFile(path, raw[:cut], 0o644)
		if _, _, err := readSafetensors(path); err == nil {
			t.Errorf("file cut to %d of %d bytes was accepted", cut, len(raw))
		}
	}
}
