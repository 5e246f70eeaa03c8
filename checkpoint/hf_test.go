package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/hfgolden"
	"github.com/memo-research/memo/internal/safetensors"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

// logitsAt runs the model on ids and returns the logits at position pos of
// every row (pos < 0 counts from the end).
func logitsAt(t *testing.T, g *model.GPT, ids [][]int32, pos int) [][]float32 {
	t.Helper()
	flat := []int64{}
	for _, r := range ids {
		for _, id := range r {
			flat = append(flat, int64(id))
		}
	}
	x := ts.MustOfSlice(flat).MustView([]int64{int64(len(ids)), int64(len(ids[0]))}, true)
	defer x.MustDrop()
	if pos < 0 {
		pos += len(ids[0])
	}
	var out [][]float32
	torchx.NoGrad(func() {
		logits := g.Forward(x)
		at := logits.MustSelect(1, int64(pos), true)
		v := int(at.MustSize()[1])
		vals := make([]float32, len(ids)*v)
		at.MustContiguous(true).MustCopyData(vals, uint(len(vals)))
		for i := range ids {
			out = append(out, vals[i*v:(i+1)*v])
		}
	})
	return out
}

// goldenDirs lists every reference checkpoint (hfgolden.All).
func goldenDirs(t *testing.T) map[string]string {
	t.Helper()
	dirs, err := hfgolden.All("..", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestHFGoldens loads each reference checkpoint through the public API and
// matches every expected value: logits at two positions to 1e-3, per-token
// NLL to 1e-4, greedy continuations exactly, with and without the cache.
func TestHFGoldens(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for name, dir := range goldenDirs(t) {
		t.Run(name, func(t *testing.T) {
			want, err := hfgolden.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			g, _, err := LoadHF(dir, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, g, want)
		})
	}
}

// checkGolden compares g with a reference checkpoint's expected values.
func checkGolden(t *testing.T, g *model.GPT, want hfgolden.Case) {
	t.Helper()
	for _, c := range []struct {
		what string
		pos  int
		want [][]float64
	}{{"last position", -1, want.LogitsLast}, {"position 5", 5, want.LogitsPos5}} {
		got := logitsAt(t, g, want.IDs, c.pos)
		worst := 0.0
		for r := range got {
			if len(got[r]) != len(c.want[r]) {
				t.Fatalf("%s row %d: %d logits, want %d", c.what, r, len(got[r]), len(c.want[r]))
			}
			for j := range got[r] {
				worst = math.Max(worst, math.Abs(float64(got[r][j])-c.want[r][j]))
			}
		}
		if !(worst <= want.LogitsTol()) {
			t.Errorf("logits at %s differ by up to %.3g (tolerance %g)", c.what, worst, want.LogitsTol())
		}
	}
	nll, err := engine.TokenNLL(g, want.IDs)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for r := range nll {
		if len(nll[r]) != len(want.NLL[r]) {
			t.Fatalf("row %d: %d NLL values, want %d", r, len(nll[r]), len(want.NLL[r]))
		}
		for j := range nll[r] {
			worst = math.Max(worst, math.Abs(float64(nll[r][j])-want.NLL[r][j]))
		}
	}
	if !(worst <= want.NLLTol()) {
		t.Errorf("NLL differs by up to %.3g (tolerance %g)", worst, want.NLLTol())
	}
	n := len(want.GreedyContinuations[0])
	for _, cache := range []bool{true, false} {
		got, err := engine.Generate(g, want.GreedyPrompts, n, engine.GenOptions{UseCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		for r := range got {
			if !slices.Equal(got[r], want.GreedyContinuations[r]) {
				t.Errorf("cache=%v row %d: greedy %v, want %v", cache, r, got[r], want.GreedyContinuations[r])
			}
		}
	}
}

// TestExportRoundTrip: a memo checkpoint exported as a Hugging Face
// directory and imported again computes bit-identical logits, for memo's
// own layout and for an imported GPT-NeoX model saved as a memo checkpoint.
func TestExportRoundTrip(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	neox, _, err := LoadHF(filepath.Join("..", "testdata", "hf", "neox-pythia-style-fp16"), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]*model.GPT{
		"memo tiny, tied":  newModel(t, model.Config{Preset: "nano", Vocab: 97, Context: 64, Seed: 4}),
		"memo gqa, untied": newModel(t, model.Config{Preset: "nano", Vocab: 97, Context: 64, KVHeads: 2, Untied: true, Seed: 5}),
		"imported neox":    neox,
	}
	for _, name := range hfgolden.TransformersNames {
		dir, err := hfgolden.TransformersDir("..", name)
		if err != nil {
			t.Fatal(err)
		}
		if cases[name], _, err = LoadHF(dir, "cpu"); err != nil {
			t.Fatal(err)
		}
	}
	for name, g := range cases {
		for _, form := range []model.HFForm{model.HFForm5, model.HFForm4} {
			t.Run(fmt.Sprintf("%s/form%d", name, form), func(t *testing.T) { exportRoundTrip(t, g, form) })
		}
	}
}

// exportRoundTrip saves g as a memo checkpoint, exports it in the given
// config form, imports it again and compares logits bit for bit.
func exportRoundTrip(t *testing.T, g *model.GPT, form model.HFForm) {
	t.Helper()
	{
		{
			run := t.TempDir()
			dir, err := Save(run, g, nil, State{Step: 1, TotalSteps: 1}, 0)
			if err != nil {
				t.Fatal(err)
			}
			parent := t.TempDir()
			out := filepath.Join(parent, "hf")
			// Interrupted (SIGINT, SIGTERM): no OUT, and no temporary
			// directory left beside it.
			stopped, cancel := context.WithCancel(context.Background())
			cancel()
			if err := Export(stopped, dir, out, ExportOptions{BOS: -1, EOS: 3, Form: form}); !errors.Is(err, context.Canceled) {
				t.Errorf("Export with a cancelled context: %v, want context.Canceled", err)
			}
			if left, _ := os.ReadDir(parent); len(left) != 0 {
				t.Errorf("an interrupted export left %v", left)
			}
			tokJSON := []byte(`{"version":"1.0","model":{"type":"WordLevel"}}` + "\n")
			if err := Export(context.Background(), dir, out, ExportOptions{Tokenizer: tokJSON, BOS: -1, EOS: 3, Form: form}); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(filepath.Join(out, HFTokenizerFile)); err != nil || !bytes.Equal(got, tokJSON) {
				t.Errorf("exported tokenizer.json %q (%v), want the bytes given", got, err)
			}
			if err := Export(context.Background(), dir, out, ExportOptions{BOS: -1, EOS: 3, Form: form}); err == nil {
				t.Error("exporting over an existing directory did not fail")
			}
			back, _, err := LoadHF(out, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			if !back.Config().SameNetwork(g.Config()) {
				t.Fatalf("re-imported config %v, want %v", back.Config(), g.Config())
			}
			ids := [][]int32{{1, 5, 9, 2, 7, 7, 3, 60, 11, 12}, {4, 4, 0, 12, 33, 8, 1, 2, 90, 96}}
			for _, pos := range []int{-1, 3} {
				a, b := logitsAt(t, g, ids, pos), logitsAt(t, back, ids, pos)
				for r := range a {
					if !slices.Equal(a[r], b[r]) {
						t.Fatalf("position %d row %d: logits differ after export and import", pos, r)
					}
				}
			}
		}
	}
}

func newModel(t *testing.T, cfg model.Config) *model.GPT {
	t.Helper()
	g, err := model.New(nn.NewVarStore(gotch.CPU).Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// LoadModel in bf16 converts each linear weight as it reads it, so the
// model never holds them in float32: it is the float32 load converted
// afterwards, bit for bit (and its joined layers the separate ones),
// whether the file holds F32 (a memo checkpoint, a tied Llama), BF16 or
// F16 weights.
func TestLoadModelInBF16(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hf := filepath.Join("..", "testdata", "hf")
	for _, dir := range []string{oldRun, filepath.Join(hf, "llama-gqa-tied"), filepath.Join(hf, "llama3-mqa-scaled-bf16"), filepath.Join(hf, "neox-pythia-style-fp16")} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			direct, _, err := LoadModel(dir, "cpu", precision.BF16)
			if err != nil {
				t.Fatal(err)
			}
			// Loaded in float32 without joining its layers, then converted.
			var later *model.GPT
			if IsHFDir(dir) {
				later, _, err = LoadHF(dir, "cpu")
			} else {
				later, _, _, err = Load(dir, "cpu")
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := precision.Set(later, precision.BF16, false); err != nil {
				t.Fatal(err)
			}
			reduced := 0
			for i, p := range direct.Params() {
				q := later.Params()[i]
				if p.Name != q.Name || p.Tensor.DType() != q.Tensor.DType() {
					t.Fatalf("%s %v, converted afterwards %s %v", p.Name, p.Tensor.DType(), q.Name, q.Tensor.DType())
				}
				if p.Tensor.DType() == gotch.BFloat16 {
					reduced++
				}
				a := p.Tensor.MustTotype(gotch.Double, false).Vals().([]float64)
				b := q.Tensor.MustTotype(gotch.Double, false).Vals().([]float64)
				for j := range a {
					if a[j] != b[j] {
						t.Fatalf("%s[%d]: %v read into bf16, %v converted afterwards", p.Name, j, a[j], b[j])
					}
				}
			}
			if reduced == 0 {
				t.Fatal("no weight held in bf16")
			}
			ids := [][]int32{{1, 2, 3, 4, 5, 6, 7, 8}}
			x, y := logitsAt(t, direct, ids, -1), logitsAt(t, later, ids, -1)
			for j := range x[0] {
				if x[0][j] != y[0][j] {
					t.Fatalf("logit %d: %v read into bf16, %v converted afterwards", j, x[0][j], y[0][j])
				}
			}
		})
	}
	if _, _, err := LoadModel(oldRun, "cpu", "fp8"); err == nil || !strings.Contains(err.Error(), "fp8") {
		t.Errorf("LoadModel in fp8: %v, want an error naming the precision", err)
	}
	// LoadModel joins the layers for inference: a precision is chosen at
	// load, not after.
	g, _, err := LoadModel(oldRun, "cpu", precision.FP32)
	if err != nil {
		t.Fatal(err)
	}
	if err := precision.Set(g, precision.BF16, false); err == nil || !strings.Contains(err.Error(), "joined") {
		t.Errorf("bf16 after a float32 LoadModel: %v, want a refusal naming the joined layers", err)
	}
}

// TestHFWeightsNotTheConfigsAreBadInput: a Hugging Face directory whose
// weights do not match its config.json (a tensor missing, one memo does
// not build, one of another shape) is the user's input (exit 2); memo run
// of such an init_from exited 1.
func TestHFWeightsNotTheConfigsAreBadInput(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	src := filepath.Join("..", "testdata", "hf", "llama-gqa-tied")
	orig, err := safetensors.Open(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer orig.Close()
	names := orig.Names()
	for _, tc := range []struct {
		name, want string
		edit       func([]safetensors.Tensor) []safetensors.Tensor
	}{
		{"missing", "no tensor", func(tensors []safetensors.Tensor) []safetensors.Tensor { return tensors[1:] }},
		{"extra", "is not part of", func(tensors []safetensors.Tensor) []safetensors.Tensor {
			return append(tensors, safetensors.Tensor{Name: "model.extra.weight_scale", DType: safetensors.F32, Shape: []int64{2}})
		}},
		{"transposed", "config.json implies", func(tensors []safetensors.Tensor) []safetensors.Tensor {
			for i, x := range tensors {
				if len(x.Shape) == 2 && x.Shape[0] != x.Shape[1] {
					tensors[i].Shape = []int64{x.Shape[1], x.Shape[0]}
					break
				}
			}
			return tensors
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			raw, err := os.ReadFile(filepath.Join(src, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
				t.Fatal(err)
			}
			var tensors []safetensors.Tensor
			for _, n := range names {
				info, _ := orig.Info(n)
				tensors = append(tensors, safetensors.Tensor{Name: n, DType: safetensors.F32, Shape: info.Shape})
			}
			tensors = tc.edit(tensors)
			err = safetensors.Write(filepath.Join(dir, "model.safetensors"), tensors, nil, func(i int) ([]float32, error) {
				n := int64(1)
				for _, d := range tensors[i].Shape {
					n *= d
				}
				return make([]float32, n), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = LoadHF(dir, "cpu")
			if err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v; want bad input containing %q", err, tc.want)
			}
		})
	}
}

// TestHFLoadErrorNamesTensorOnce: a tensor memo cannot read is named with
// its file once ("FILE: tensor T has dtype I32: ..."), and so is a weight
// that is not finite; the reader's message was wrapped in the same
// prefix again.
func TestHFLoadErrorNamesTensorOnce(t *testing.T) {
	src := filepath.Join("..", "testdata", "hf", "llama-gqa-tied")
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"dtype", `"model.norm.weight":{"dtype":"F32"`, `"model.norm.weight":{"dtype":"I32"`, "tensor model.norm.weight has dtype I32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"config.json", ModelFile} {
				b, err := os.ReadFile(filepath.Join(src, f))
				if err != nil {
					t.Fatal(err)
				}
				if f == ModelFile {
					if !bytes.Contains(b, []byte(tc.from)) {
						t.Fatalf("%s holds no %s", f, tc.from)
					}
					b = bytes.Replace(b, []byte(tc.from), []byte(tc.to), 1)
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err := LoadHF(dir, "cpu")
			if err == nil {
				t.Fatal("LoadHF accepted it")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Count(msg, ModelFile) != 1 || strings.Count(msg, "model.norm.weight") != 1 {
				t.Errorf("error %q: want %q, the file and the tensor named once each", msg, tc.want)
			}
		})
	}
}
