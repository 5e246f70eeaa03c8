package experiments

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strconv"
)

// Bounds every spec value is held to before any work, in one table: every
// number of every table (found by walking the spec's structs by their TOML
// names, so a new key cannot skip it) must be finite, and the keys below
// must also lie in their range (min -Inf: none; max 0: none). The stage
// tables' Validate then check the rest (plots.width_in's range, lr > 0,
// what depends on several keys), on values known to be finite.
type bound struct {
	key      string
	min, max float64 // inclusive; max 0: no upper bound
	why      string  // appended to the message
}

// maxThreadsPerCore bounds train.threads: more than this many threads a
// core is a typo (libtorch aborts creating 1e12).
const maxThreadsPerCore = 64

// MaxThreads is the most libtorch threads train.threads and every
// command's --threads take on this machine: past it a process spends its
// memory on thread stacks (a probe's --threads 100000 made 32,000 and
// outlived SIGTERM).
func MaxThreads() int { return maxThreadsPerCore * runtime.NumCPU() }

// maxBatchSize bounds train.batch_size: past it no machine holds a step.
const maxBatchSize = 1 << 20

// maxDedupWindow bounds data.dedup_tokens: the suffix sort compares up to
// L tokens of a window, and no document of memo's holds a longer span worth
// cutting as a repeat.
const maxDedupWindow = 1 << 16

// maxRepetitions bounds how often a document appears in the stream
// (data.repetitions, each of data.repetition_groups, the background's
// passes): the stream holds an entry per appearance, and past 2^31 the
// count wrapped (4294967297 repetitions trained each target once while
// the summary said otherwise; 9e18 overflowed train_tokens, or was killed
// for memory with no message). Singh et al. 2025 go to 128.
const maxRepetitions = 1 << 20

// maxEpochs bounds train.epochs: past it the step count overflows.
const maxEpochs = 1e6

// maxSteps bounds train.steps, a thousand times the longest pretraining
// runs' (Llama 2's 500,000 steps): 2^63 steps started a run whose ETA
// overflowed to a negative duration.
const maxSteps = 1e9

func bounds() []bound {
	nonNeg := func(key, why string) bound { return bound{key: key, min: 0, why: why} }
	return []bound{
		nonNeg("model.norm_eps", "0 means 1e-5"),
		nonNeg("model.rope_theta", "0 means 10000"),
		nonNeg("model.rotary_pct", "0 means 1"),
		nonNeg("model.rope_factor", ""),
		nonNeg("model.rope_low_freq_factor", ""),
		nonNeg("model.rope_high_freq_factor", ""),
		nonNeg("model.local_rope_theta", "0 means rope_theta"),
		nonNeg("model.attn_softcap", "0 means none"),
		nonNeg("model.final_softcap", "0 means none"),
		nonNeg("model.query_scalar", "0 means head_dim"),
		nonNeg("model.qkv_clip", "0 means none"),
		nonNeg("train.weight_decay", ""),
		nonNeg("train.clip", "0 disables clipping"),
		// train.eps > 0 is train.Config.Validate's alone: a bound here
		// said "must be >= 0", and 0 then "must be > 0".
		nonNeg("train.min_lr", ""),
		{key: "train.epochs", min: 0, max: maxEpochs},
		{key: "train.steps", min: 0, max: maxSteps, why: "optimizer steps; 0: train.epochs passes"},
		{key: "train.threads", min: 0, max: float64(MaxThreads()),
			why: fmt.Sprintf("at most %d threads for each of this machine's %d cores; 0 keeps libtorch's default", maxThreadsPerCore, runtime.NumCPU())},
		{key: "train.batch_size", min: math.Inf(-1), max: maxBatchSize, why: "rows per step over all processes"},
		nonNeg("train.dp.noise_multiplier", "σ; 0 clips without noise"),
		nonNeg("train.dp.target_epsilon", "0: use train.dp.noise_multiplier"),
		{key: "train.dp.delta", min: 0, max: 1, why: "0 and 1 excluded: δ of (ε, δ)-DP"},
		{key: "train.dp.sample_rate", min: 0, max: 1, why: "0: train.batch_size / N"},
		// train.lora.rank >= 1 and alpha > 0 are LoRAConfig.Validate's
		// alone: a bound here said "must be >= 0", and 0 then "must be
		// >= 1" (or "> 0").
		{key: "train.lora.dropout", min: 0, max: 1},
		{key: "data.dedup_tokens", min: 0, max: maxDedupWindow, why: "0: off; else the window L of tokens a repeated span has at least"},
		{key: "data.repetitions", min: math.Inf(-1), max: maxRepetitions, why: "appearances of each target in the stream"},
		{key: "data.repetition_groups", min: math.Inf(-1), max: maxRepetitions, why: "appearances of each target in the stream"},
		{key: "data.background_passes", min: math.Inf(-1), max: maxRepetitions, why: "appearances of each background document"},
		{key: "data.pretrain_passes", min: math.Inf(-1), max: maxRepetitions, why: "passes over the background before the targets"},
	}
}

// want says what the bound asks: "must be in [0, 1] (why)".
func (b bound) want() string {
	want := "must be >= " + num(b.min)
	switch {
	case math.IsInf(b.min, -1):
		want = "must be <= " + num(b.max)
	case b.max != 0:
		want = "must be in [" + num(b.min) + ", " + num(b.max) + "]"
	}
	if b.why != "" {
		want += " (" + b.why + ")"
	}
	return want
}

// num formats a bound as a spec would write it (1048576, not 1.048576e+06).
func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// checkBounds holds spec (a pointer to a decoded struct) to the bounds.
func checkBounds(file string, doc []byte, spec any) error {
	limits := map[string]bound{}
	for _, b := range bounds() {
		limits[b.key] = b
	}
	fail := func(key, format string, args ...any) error {
		return &ConfigError{File: file, Line: keyLine(doc, key), Key: key, Msg: fmt.Sprintf(key+" = "+format, args...)}
	}
	var walk func(v reflect.Value, prefix string) error
	walk = func(v reflect.Value, prefix string) error {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name := tomlName(t.Field(i))
			if name == "" {
				continue
			}
			key := name
			if prefix != "" {
				key = prefix + "." + name
			}
			f := v.Field(i)
			var x float64
			switch f.Kind() {
			case reflect.Struct:
				if err := walk(f, key); err != nil {
					return err
				}
				continue
			case reflect.Slice:
				if f.Type().Elem().Kind() == reflect.Float64 || f.Type().Elem().Kind() == reflect.Float32 {
					for j := 0; j < f.Len(); j++ {
						if y := f.Index(j).Float(); math.IsNaN(y) || math.IsInf(y, 0) {
							return fail(key, "[..., %v, ...]: every value must be a finite number", y)
						}
					}
				}
				// An integer list with a bound holds each of its values to it.
				if b, ok := limits[key]; ok && f.Type().Elem().Kind() == reflect.Int {
					for j := 0; j < f.Len(); j++ {
						if y := float64(f.Index(j).Int()); y < b.min || (b.max != 0 && y > b.max) {
							return fail(key, "[..., %v, ...]: every value %s", f.Index(j).Interface(), b.want())
						}
					}
				}
				continue
			case reflect.Float32, reflect.Float64:
				x = f.Float()
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return fail(key, "%v: must be a finite number", x)
				}
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				x = float64(f.Int())
			default:
				continue
			}
			b, ok := limits[key]
			if !ok || (x >= b.min && (b.max == 0 || x <= b.max)) {
				continue
			}
			return fail(key, "%v: %s", f.Interface(), b.want())
		}
		return nil
	}
	v := reflect.ValueOf(spec)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return walk(v, "")
}
