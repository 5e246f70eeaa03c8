package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// sameBits compares float32 slices bit for bit, so that NaN equals NaN and
// -0 differs from 0.
func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#08x), want %v (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// stored is what reading back v stored as dtype must give.
func stored(v []float32, dtype string) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		switch dtype {
		case BF16:
			out[i] = BF16ToFloat32(Float32ToBF16(x))
		case F16:
			out[i] = F16ToFloat32(Float32ToF16(x))
		default:
			out[i] = x
		}
	}
	return out
}

func TestWriteReadRoundTrip(t *testing.T) {
	for _, dtype := range []string{F32, BF16, F16} {
		t.Run(dtype, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "m.safetensors")
			if err := writeGood(path, dtype); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("Write left %d files in the directory, want just the file", len(ents))
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			hl := binary.LittleEndian.Uint64(raw)
			if hl%8 != 0 {
				t.Errorf("header length %d: want a multiple of 8", hl)
			}
			if !strings.HasPrefix(string(raw[8:]), `{"__metadata__":{"format":"pt","producer":"memo-test"},"empty":{"dtype":"`+dtype+`","shape":[0,3],"data_offsets":[`) {
				t.Errorf("header does not start with the sorted keys:\n%s", raw[8:8+hl])
			}
			if !strings.Contains(string(raw[8:8+hl]), `"scalar":{"dtype":"`+dtype+`","shape":[],`) {
				t.Errorf("scalar's shape is not []:\n%s", raw[8:8+hl])
			}
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tensors, vals := goodTensors(dtype)
			if got, want := f.Names(), []string{"values", "scalar", "empty", "row"}; !slices.Equal(got, want) {
				t.Errorf("Names() = %v, want the write order %v", got, want)
			}
			if !reflect.DeepEqual(f.Metadata(), fixtureMeta) {
				t.Errorf("Metadata() = %v, want %v", f.Metadata(), fixtureMeta)
			}
			size := dtypeSize[dtype]
			var off int64
			for i, ts := range tensors {
				info, ok := f.Info(ts.Name)
				n := int64(len(vals[i])) * size
				want := Info{Name: ts.Name, DType: dtype, Shape: ts.Shape, Begin: off, End: off + n}
				if !ok || !reflect.DeepEqual(info, want) {
					t.Errorf("Info(%s) = %+v, %v; want %+v", ts.Name, info, ok, want)
				}
				off += n
				got, err := f.Float32(ts.Name)
				if err != nil {
					t.Fatal(err)
				}
				sameBits(t, ts.Name, got, stored(vals[i], dtype))
			}
			if int64(len(raw))-8-int64(hl) != off {
				t.Errorf("data section %d bytes, want %d", int64(len(raw))-8-int64(hl), off)
			}
			if _, ok := f.Info("nope"); ok {
				t.Error("Info of a missing tensor says ok")
			}
			if _, err := f.Float32("nope"); err == nil || !strings.Contains(err.Error(), "no tensor nope") {
				t.Errorf("Float32 of a missing tensor: %v", err)
			}
		})
	}
}

// The committed fixtures read back as their values stored in each dtype:
// F32 exactly, BF16 and F16 rounded to nearest even (values past binary16's
// range become infinities, 1e-10 a zero).
func TestReadFixtures(t *testing.T) {
	want16 := map[string][]float32{
		F16: {0, float32(math.Copysign(0, -1)), 1, -2.5, 0.33325195, 3.140625, 0.0010004044, -7,
			65504, 6.1035156e-05, 5.9604645e-08, 0, float32(math.Inf(1)),
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())},
		BF16: {0, float32(math.Copysign(0, -1)), 1, -2.5, 0.333984375, 3.140625, 0.00099945068, -7,
			65536, 6.1035156e-05, 5.9604645e-08, 1.0004442e-10, 9.9727714e+19,
			float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())},
		F32: fixtureValues,
	}
	for dtype, want := range want16 {
		f, err := Open(filepath.Join("testdata", lower(dtype)+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Float32("values")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] && !(got[i] != got[i] && want[i] != want[i]) || math.Signbit(float64(got[i])) != math.Signbit(float64(want[i])) {
				t.Errorf("%s values[%d] = %v, want %v", dtype, i, got[i], want[i])
			}
		}
	}
}

func TestOpenRejectsBadFiles(t *testing.T) {
	for _, b := range badFixtures() {
		t.Run(filepath.Base(b.file), func(t *testing.T) {
			path := filepath.Join("testdata", b.file)
			f, err := Open(path)
			if err == nil {
				f.Close()
				t.Fatalf("Open(%s) accepted a bad file", path)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, path+": ") || strings.Contains(msg, "\n") {
				t.Errorf("error is not one line starting with the path: %q", msg)
			}
			for _, w := range b.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
		})
	}
	if _, err := Open(filepath.Join("testdata", "absent.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v, want ErrNotExist", err)
	}
}

// A file truncated at any byte fails at Open, naming the file.
func TestOpenRejectsEveryTruncation(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "bf16.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "cut.safetensors")
	for n := 0; n < len(raw); n++ {
		if err := os.WriteFile(path, raw[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		if f, err := Open(path); err == nil {
			f.Close()
			t.Fatalf("file cut to %d of %d bytes was accepted", n, len(raw))
		} else if !strings.HasPrefix(err.Error(), path) {
			t.Fatalf("cut to %d bytes: error does not name the file: %v", n, err)
		}
	}
}

func TestMixedDTypes(t *testing.T) {
	f, err := Open(filepath.Join("testdata", "mixed.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases := []struct {
		name string
		want []float32
		err  string
	}{
		{"a", []float32{1.5, -2}, ""},
		{"b", []float32{1, -3}, ""},
		{"c", []float32{1, 5.9604645e-08}, ""},
		{"x", nil, "testdata/mixed.safetensors: tensor x has dtype I8: memo reads F32, BF16 and F16"},
	}
	for _, c := range cases {
		got, err := f.Float32(c.name)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("Float32(%s) error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, c.name, got, c.want)
	}
	if info, ok := f.Info("x"); !ok || info.DType != "I8" || info.Begin != 16 || info.End != 20 {
		t.Errorf("Info(x) = %+v", info)
	}
}

func TestWriteRefuses(t *testing.T) {
	ok := func(i int) ([]float32, error) { return []float32{1, 2}, nil }
	cases := []struct {
		name    string
		tensors []Tensor
		data    func(int) ([]float32, error)
		want    string
	}{
		{"int dtype", []Tensor{{Name: "a", DType: "I32", Shape: []int64{2}}}, ok, `tensor a: dtype "I32": memo writes F32, BF16 and F16`},
		{"duplicate", []Tensor{{Name: "a", DType: F32, Shape: []int64{2}}, {Name: "a", DType: F32, Shape: []int64{2}}}, ok, "tensor a listed twice"},
		{"metadata name", []Tensor{{Name: "__metadata__", DType: F32, Shape: []int64{2}}}, ok, "cannot name a tensor"},
		{"wrong count", []Tensor{{Name: "a", DType: BF16, Shape: []int64{3}}}, ok, "tensor a: 2 values, shape [3] holds 3"},
		{"data error", []Tensor{{Name: "a", DType: F16, Shape: []int64{2}}}, func(int) ([]float32, error) { return nil, errors.New("device lost") }, "tensor a: device lost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.safetensors")
			err := Write(path, c.tensors, nil, c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "write "+path) {
				t.Errorf("Write: %v, want an error naming %s and saying %q", err, path, c.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("a failed Write left %v behind", ents)
			}
		})
	}
}

// A failed Write leaves a previous file at the path untouched.
func TestWriteFailureKeepsOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := writeGood(path, F32); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	err := Write(path, []Tensor{{Name: "a", DType: F32, Shape: []int64{1}}}, nil, func(int) ([]float32, error) { return nil, errors.New("boom") })
	if err == nil {
		t.Fatal("Write succeeded")
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("a failed Write changed the file already at its path")
	}
}

func TestOpenDir(t *testing.T) {
	t.Run("sharded", func(t *testing.T) {
		s, err := OpenDir(filepath.Join("testdata", "sharded"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		want := []string{"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight", "model.layers.1.mlp.up_proj.weight", "model.layers.1.self_attn.q_proj.weight", "model.norm.weight", "lm_head.weight"}
		if got := s.Names(); !slices.Equal(got, want) {
			t.Errorf("Names() = %v, want shard by shard in data order %v", got, want)
		}
		for k, name := range want {
			got, err := s.Float32(name)
			if err != nil {
				t.Fatal(err)
			}
			sameBits(t, name, got, stored([]float32{float32(len(name)), float32(k%2) + 0.5}, BF16))
		}
		if info, ok := s.Info("model.norm.weight"); !ok || info.DType != BF16 || info.Begin != 0 {
			t.Errorf("Info(model.norm.weight) = %+v, %v", info, ok)
		}
		if f := s.FileOf("lm_head.weight"); filepath.Base(f) != "model-00003-of-00003.safetensors" {
			t.Errorf("FileOf(lm_head.weight) = %s", f)
		}
		if s.Metadata()["format"] != "pt" {
			t.Errorf("Metadata() = %v", s.Metadata())
		}
	})
	t.Run("single", func(t *testing.T) {
		dir := t.TempDir()
		if err := writeGood(filepath.Join(dir, SingleFile), F16); err != nil {
			t.Fatal(err)
		}
		s, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got := s.Names(); !slices.Equal(got, []string{"values", "scalar", "empty", "row"}) {
			t.Errorf("Names() = %v", got)
		}
		got, err := s.Float32("row")
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, "row", got, []float32{-1, 0.5, 1024})
	})
	// save_pretrained without shards into a directory that held a sharded
	// save leaves the old index (and, copied by hand, maybe the shards):
	// transformers reads model.safetensors, and so does OpenDir, as does
	// WeightFiles, which the base digest reads.
	t.Run("single beside a stale index", func(t *testing.T) {
		for _, keepShards := range []bool{true, false} {
			dir := t.TempDir()
			sharded := filepath.Join("testdata", "sharded")
			entries, err := os.ReadDir(sharded)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != IndexFile && !keepShards {
					continue
				}
				b, err := os.ReadFile(filepath.Join(sharded, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeGood(filepath.Join(dir, SingleFile), F16); err != nil {
				t.Fatal(err)
			}
			s, err := OpenDir(dir)
			if err != nil {
				t.Fatalf("shards kept %v: %v", keepShards, err)
			}
			got := s.Names()
			s.Close()
			if !slices.Equal(got, []string{"values", "scalar", "empty", "row"}) {
				t.Errorf("shards kept %v: Names() = %v, want model.safetensors's", keepShards, got)
			}
			files, err := WeightFiles(dir)
			if err != nil || !slices.Equal(files, []string{filepath.Join(dir, SingleFile)}) {
				t.Errorf("shards kept %v: WeightFiles = %v, %v; want model.safetensors alone", keepShards, files, err)
			}
		}
	})
	bad := []struct {
		dir  string
		want string // the whole message, with DIR for the directory
	}{
		{"sharded-missing", "DIR/model-00002-of-00003.safetensors: no such file (named by model.safetensors.index.json for tensor model.layers.1.mlp.up_proj.weight)"},
		{"sharded-misplaced", "DIR/model-00001-of-00003.safetensors: no tensor model.norm.weight, which model.safetensors.index.json places in this shard"},
		{"sharded-escape", `DIR/model.safetensors.index.json: tensor model.norm.weight maps to "../f32.safetensors", not a file name in DIR`},
		{"bad", "DIR: neither model.safetensors nor model.safetensors.index.json (not a safetensors model directory)"},
	}
	for _, b := range bad {
		t.Run(b.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", b.dir)
			s, err := OpenDir(dir)
			if err == nil {
				s.Close()
				t.Fatal("OpenDir accepted it")
			}
			if want := strings.ReplaceAll(b.want, "DIR", dir); err.Error() != want {
				t.Errorf("error\n  %s\nwant\n  %s", err, want)
			}
		})
	}
}

// goldenDirs are the Hugging Face checkpoints in the repository's
// testdata/hf, written by PyTorch's safetensors, one per stored dtype.
var goldenDirs = []string{"llama-gqa-tied", "llama3-mqa-scaled-bf16", "neox-pythia-style-fp16"}

// The reference files open, hold the dtype expected.json says, and their
// data section is exactly what Write makes of the values read: decoding is
// exact and encoding rounds each of them back to its own bits. Sharding
// them changes nothing a reader sees.
func TestHuggingFaceGoldens(t *testing.T) {
	for _, c := range goldenDirs {
		t.Run(c, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "hf", c)
			var exp struct {
				WeightsDType string `json:"weights_dtype"`
			}
			var cfg struct {
				Vocab  int64 `json:"vocab_size"`
				Hidden int64 `json:"hidden_size"`
			}
			readJSON(t, filepath.Join(dir, "expected.json"), &exp)
			readJSON(t, filepath.Join(dir, "config.json"), &cfg)
			s, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			names := s.Names()
			var tensors []Tensor
			values := map[string][]float32{}
			embedded := false
			for _, n := range names {
				info, _ := s.Info(n)
				if info.DType != exp.WeightsDType {
					t.Errorf("%s: dtype %s, expected.json says %s", n, info.DType, exp.WeightsDType)
				}
				if strings.HasSuffix(n, "embed_tokens.weight") || strings.HasSuffix(n, "embed_in.weight") {
					embedded = true
					if !slices.Equal(info.Shape, []int64{cfg.Vocab, cfg.Hidden}) {
						t.Errorf("%s: shape %v, config.json says [%d %d]", n, info.Shape, cfg.Vocab, cfg.Hidden)
					}
				}
				v, err := s.Float32(n)
				if err != nil {
					t.Fatal(err)
				}
				nonzero := false
				for _, x := range v {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
						t.Fatalf("%s holds %v", n, x)
					}
					nonzero = nonzero || x != 0
				}
				if !nonzero && !strings.HasSuffix(n, ".bias") {
					t.Errorf("%s is all zeros: misread?", n)
				}
				values[n] = v
				tensors = append(tensors, Tensor{Name: n, DType: info.DType, Shape: info.Shape})
			}
			if !embedded {
				t.Error("no embedding matrix among", names)
			}
			out := filepath.Join(t.TempDir(), "rewritten.safetensors")
			if err := Write(out, tensors, s.Metadata(), func(i int) ([]float32, error) { return values[tensors[i].Name], nil }); err != nil {
				t.Fatal(err)
			}
			if a, b := dataSection(t, filepath.Join(dir, SingleFile)), dataSection(t, out); string(a) != string(b) {
				t.Errorf("rewriting the values read gives a different data section (%d vs %d bytes)", len(b), len(a))
			}

			// Three shards plus an index read the same.
			sharded := t.TempDir()
			weightMap := map[string]string{}
			for k := 0; k < 3; k++ {
				file := []string{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"}[k]
				part := tensors[k*len(tensors)/3 : (k+1)*len(tensors)/3]
				for _, p := range part {
					weightMap[p.Name] = file
				}
				if err := Write(filepath.Join(sharded, file), part, nil, func(i int) ([]float32, error) { return values[part[i].Name], nil }); err != nil {
					t.Fatal(err)
				}
			}
			idx, _ := json.Marshal(map[string]any{"weight_map": weightMap})
			if err := os.WriteFile(filepath.Join(sharded, IndexFile), idx, 0o644); err != nil {
				t.Fatal(err)
			}
			ss, err := OpenDir(sharded)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			if !slices.Equal(ss.Names(), names) {
				t.Errorf("sharded Names() = %v, want %v", ss.Names(), names)
			}
			for _, n := range names {
				v, err := ss.Float32(n)
				if err != nil {
					t.Fatal(err)
				}
				sameBits(t, n, v, values[n])
			}
		})
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func dataSection(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b[8+binary.LittleEndian.Uint64(b):]
}

// FuzzOpen: whatever the bytes, Open either refuses them or returns a file
// whose every float tensor reads back with as many values as its shape
// holds, and nothing panics or allocates past the file's size.
func FuzzOpen(f *testing.F) {
	f.Add(mixedFile())
	f.Add(rawFile(`{"a":{"dtype":"F16","shape":[],"data_offsets":[0,2]}}`, []byte{0, 0x3c}))
	f.Fuzz(func(t *testing.T, b []byte) {
		// parse is Open after the os.Open: fuzzing it from memory skips a
		// file write per input.
		const path = "fuzz.safetensors"
		sf, err := parse(path, bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), path) {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		defer sf.Close()
		var total int64
		for _, n := range sf.Names() {
			info, ok := sf.Info(n)
			if !ok || info.Begin != total {
				t.Fatalf("tensor %s: %+v, want it to start at %d", n, info, total)
			}
			total = info.End
			if !floatDType(info.DType) {
				continue
			}
			v, err := sf.Float32(n)
			if err != nil {
				t.Fatalf("Float32(%s) of an accepted file: %v", n, err)
			}
			if int64(len(v)) != info.Numel() {
				t.Fatalf("Float32(%s): %d values, shape %v", n, len(v), info.Shape)
			}
		}
		if hl := int64(binary.LittleEndian.Uint64(b)); 8+hl+total != int64(len(b)) {
			t.Fatalf("accepted a file of %d bytes whose header (%d) and tensors (%d) do not add up", len(b), hl, total)
		}
	})
}

// TestWriteLentSumAndProgress: the digest fed while writing is the
// file's, progress ends at the file's size, and lent values are written
// like returned ones.
func TestWriteLentSumAndProgress(t *testing.T) {
	dir := t.TempDir()
	tensors := []Tensor{{"a", F32, []int64{3, 5}}, {"b", BF16, []int64{700000}}, {"c", F32, []int64{0}}}
	vals := func(i int) []float32 {
		v := make([]float32, Info{Shape: tensors[i].Shape}.Numel())
		for j := range v {
			v[j] = float32(i) + float32(j)/7
		}
		return v
	}
	lent, given := filepath.Join(dir, "lent.safetensors"), filepath.Join(dir, "given.safetensors")
	sum := sha256.New()
	var done []int64
	var size int64
	err := WriteLent(lent, tensors, map[string]string{"k": "v"}, func(i int, use func([]float32) error) error {
		return use(vals(i))
	}, WriteOptions{Sum: sum, Progress: func(d, total int64) { done = append(done, d); size = total }})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(given, tensors, map[string]string{"k": "v"}, func(i int) ([]float32, error) { return vals(i), nil }); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(lent)
	b, _ := os.ReadFile(given)
	if !bytes.Equal(a, b) {
		t.Fatal("WriteLent and Write wrote different files")
	}
	if want := sha256.Sum256(a); !bytes.Equal(sum.Sum(nil), want[:]) {
		t.Errorf("digest while writing %x, file's %x", sum.Sum(nil), want)
	}
	if len(done) != len(tensors) || !slices.IsSorted(done) || done[len(done)-1] != int64(len(a)) || size != int64(len(a)) {
		t.Errorf("progress %v of %d, want %d calls ending at the file's %d bytes", done, size, len(tensors), len(a))
	}
	err = WriteLent(filepath.Join(dir, "short.safetensors"), tensors[:1], nil, func(i int, use func([]float32) error) error {
		return use(make([]float32, 14))
	}, WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "14 values, shape [3 5] holds 15") {
		t.Errorf("a short tensor: err %v", err)
	}
}
