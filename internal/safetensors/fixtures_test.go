package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The files under testdata/ are made by this file's makeFixtures: run
//
//	go test ./internal/safetensors -run TestFixtures -update
//
// after changing it, and commit what changes. Without -update the test
// checks that Write still produces the committed good files byte for byte.
var update = flag.Bool("update", false, "rewrite the testdata/ fixtures")

// fixtureValues are the values of the good fixtures' first tensor: normal
// numbers, signed zeros, values that need rounding, extremes of binary16
// (largest finite, smallest normal and subnormal) and non-finite ones.
var fixtureValues = []float32{
	0, float32(math.Copysign(0, -1)), 1, -2.5, 1.0 / 3, 3.14159265, 1e-3, -7,
	65504, 6.1035156e-05, 5.9604645e-08, 1e-10, 1e20,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
}

// goodTensors is the tensor list of the one-dtype good fixtures: the
// values above as [4, 4], a scalar, an empty tensor and a [3] row.
func goodTensors(dtype string) ([]Tensor, [][]float32) {
	return []Tensor{
			{Name: "values", DType: dtype, Shape: []int64{4, 4}},
			{Name: "scalar", DType: dtype, Shape: []int64{}},
			{Name: "empty", DType: dtype, Shape: []int64{0, 3}},
			{Name: "row", DType: dtype, Shape: []int64{3}},
		}, [][]float32{
			fixtureValues, {42.5}, {}, {-1, 0.5, 1024},
		}
}

var fixtureMeta = map[string]string{"format": "pt", "producer": "memo-test"}

func writeGood(path, dtype string) error {
	ts, vals := goodTensors(dtype)
	return Write(path, ts, fixtureMeta, func(i int) ([]float32, error) { return vals[i], nil })
}

// rawFile assembles a safetensors file from a header as written (not
// padded) and data bytes, for fixtures that Write would refuse to make.
func rawFile(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), data...)
}

func f32Bytes(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// badFixture is a file Open must refuse, with the words its error must hold.
type badFixture struct {
	file string
	data []byte
	want []string
}

func badFixtures() []badFixture {
	good, err := os.ReadFile(filepath.Join("testdata", "f32.safetensors"))
	if err != nil && !*update {
		panic(err)
	}
	var hugeLen [16]byte
	binary.LittleEndian.PutUint64(hugeLen[:], 1<<62) // would be exabytes if believed
	pastEOF := binary.LittleEndian.AppendUint64(nil, 4096)
	pastEOF = append(pastEOF, `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`...)
	return []badFixture{
		{"bad/truncated.safetensors", truncate(good, 3), []string{"tensor row", "end past the", "truncated"}},
		{"bad/trailing.safetensors", append(append([]byte{}, good...), 0, 0, 0, 0), []string{"trailing bytes"}},
		{"bad/short.safetensors", []byte{1, 2, 3, 4, 5}, []string{"5 bytes", "too short"}},
		{"bad/huge-header-length.safetensors", hugeLen[:], []string{"header length 4611686018427387904", "16-byte file"}},
		{"bad/header-past-eof.safetensors", pastEOF, []string{"header length 4096", "truncated or not safetensors"}},
		{"bad/not-json.safetensors", rawFile(`{"a": {"dtype": "F32",`, f32Bytes(1)), []string{"not valid JSON"}},
		{"bad/not-an-object.safetensors", rawFile(`[1, 2, 3]`, nil), []string{"not a JSON object"}},
		{"bad/unknown-dtype.safetensors", rawFile(`{"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}`, f32Bytes(1, 2)),
			[]string{"tensor w", `unknown dtype "F33"`}},
		{"bad/overlap.safetensors", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, f32Bytes(1, 2, 3)),
			[]string{"tensor b", "starts at byte 4", "end at 8", "overlaps"}},
		{"bad/gap.safetensors", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, f32Bytes(1, 2, 3)),
			[]string{"tensor b", "gap"}},
		{"bad/size-mismatch.safetensors", rawFile(`{"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}}`, f32Bytes(1, 2)),
			[]string{"tensor a", "hold 8 bytes", "BF16", "needs 6"}},
		{"bad/negative-dim.safetensors", rawFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, nil),
			[]string{"tensor a", "negative"}},
		{"bad/overflowing-shape.safetensors", rawFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil),
			[]string{"tensor a", "too large"}},
		{"bad/no-offsets.safetensors", rawFile(`{"a":{"dtype":"F32","shape":[1]}}`, f32Bytes(1)),
			[]string{"tensor a", "data_offsets"}},
		{"bad/bad-metadata.safetensors", rawFile(`{"__metadata__":{"format":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32Bytes(1)),
			[]string{"__metadata__"}},
	}
}

func truncate(b []byte, n int) []byte {
	if len(b) < n {
		return nil
	}
	return b[:len(b)-n]
}

// mixedFile holds one tensor of each float dtype and one int8 tensor, which
// Open accepts and Float32 refuses.
func mixedFile() []byte {
	h := `{"__metadata__":{"format":"pt"},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},` +
		`"c":{"dtype":"F16","shape":[2],"data_offsets":[12,16]},` +
		`"x":{"dtype":"I8","shape":[4],"data_offsets":[16,20]}}`
	for len(h)%8 != 0 {
		h += " "
	}
	data := f32Bytes(1.5, -2)
	data = binary.LittleEndian.AppendUint16(data, 0x3f80) // BF16 1
	data = binary.LittleEndian.AppendUint16(data, 0xc040) // BF16 -3
	data = binary.LittleEndian.AppendUint16(data, 0x3c00) // F16 1
	data = binary.LittleEndian.AppendUint16(data, 0x0001) // F16 2^-24
	data = append(data, 1, 2, 3, 0xff)
	return rawFile(h, data)
}

// shardedDirs are model directories with an index: a good one, one whose
// index names a shard that is not there, one whose index places a tensor
// in a shard that lacks it, and one whose index points outside the
// directory.
func makeSharded(root string) error {
	type shard struct {
		file  string
		names []string
	}
	write := func(dir string, shards []shard, weightMap map[string]string, skip string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, s := range shards {
			if s.file == skip {
				continue
			}
			var ts []Tensor
			var vals [][]float32
			for k, n := range s.names {
				ts = append(ts, Tensor{Name: n, DType: BF16, Shape: []int64{2}})
				vals = append(vals, []float32{float32(len(n)), float32(k) + 0.5})
			}
			if err := Write(filepath.Join(dir, s.file), ts, map[string]string{"format": "pt"}, func(i int) ([]float32, error) { return vals[i], nil }); err != nil {
				return err
			}
		}
		if weightMap == nil {
			weightMap = map[string]string{}
			for _, s := range shards {
				for _, n := range s.names {
					weightMap[n] = s.file
				}
			}
		}
		idx, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap}, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, IndexFile), append(idx, '\n'), 0o644)
	}
	three := []shard{
		{"model-00001-of-00003.safetensors", []string{"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight"}},
		{"model-00002-of-00003.safetensors", []string{"model.layers.1.mlp.up_proj.weight", "model.layers.1.self_attn.q_proj.weight"}},
		{"model-00003-of-00003.safetensors", []string{"model.norm.weight", "lm_head.weight"}},
	}
	if err := write(filepath.Join(root, "sharded"), three, nil, ""); err != nil {
		return err
	}
	if err := write(filepath.Join(root, "sharded-missing"), three, nil, three[1].file); err != nil {
		return err
	}
	misplaced := map[string]string{}
	for _, s := range three {
		for _, n := range s.names {
			misplaced[n] = s.file
		}
	}
	misplaced["model.norm.weight"] = three[0].file
	if err := write(filepath.Join(root, "sharded-misplaced"), three, misplaced, ""); err != nil {
		return err
	}
	escape := map[string]string{"model.norm.weight": "../f32.safetensors"}
	return write(filepath.Join(root, "sharded-escape"), nil, escape, "")
}

// fuzzSeeds are the fuzz corpus's starting points: small files, good and bad.
var fuzzSeeds = []string{"f16.safetensors", "mixed.safetensors", "bad/overlap.safetensors", "bad/size-mismatch.safetensors", "bad/truncated.safetensors"}

// makeFixtures (re)writes testdata/.
func makeFixtures() error {
	for _, d := range []string{F32, BF16, F16} {
		if err := writeGood(filepath.Join("testdata", fmt.Sprintf("%s.safetensors", lower(d))), d); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join("testdata", "mixed.safetensors"), mixedFile(), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join("testdata", "bad"), 0o755); err != nil {
		return err
	}
	for _, b := range badFixtures() {
		if err := os.WriteFile(filepath.Join("testdata", b.file), b.data, 0o644); err != nil {
			return err
		}
	}
	if err := makeSharded("testdata"); err != nil {
		return err
	}
	corpus := filepath.Join("testdata", "fuzz", "FuzzOpen")
	if err := os.MkdirAll(corpus, 0o755); err != nil {
		return err
	}
	for _, s := range fuzzSeeds {
		b, err := os.ReadFile(filepath.Join("testdata", s))
		if err != nil {
			return err
		}
		name := filepath.Join(corpus, filepath.Base(s))
		if err := os.WriteFile(name, []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// TestFixtures rewrites testdata/ under -update; otherwise it checks that
// Write still makes the committed good files byte for byte (the format on
// disk has not drifted) and that every bad fixture is the one described here.
func TestFixtures(t *testing.T) {
	if *update {
		if err := makeFixtures(); err != nil {
			t.Fatal(err)
		}
		t.Log("testdata/ rewritten")
		return
	}
	for _, d := range []string{F32, BF16, F16} {
		name := lower(d) + ".safetensors"
		want, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name)
		if err := writeGood(path, d); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("Write no longer reproduces testdata/%s (%d bytes, committed %d): the on-disk format changed", name, len(got), len(want))
		}
	}
	for _, b := range badFixtures() {
		got, err := os.ReadFile(filepath.Join("testdata", b.file))
		if err != nil || string(got) != string(b.data) {
			t.Errorf("testdata/%s differs from its description here (%v): rerun with -update", b.file, err)
		}
	}
}
