package extract

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/memo-research/memo/precision"
	"math"
	"strings"

	"github.com/memo-research/memo/internal/torchx"
)

// Prompt modes.
const (
	ModeReference = "reference"
	ModeFixed     = "fixed"
	ModePythia    = "pythia"
)

// Decoding strategies.
const (
	DecodeGreedy = "greedy"
	DecodeSample = "sample"
	DecodeBeam   = "beam"
)

// MinTemperature is the smallest extract.temperature: a logit divided by
// less can overflow float64 (at 1e-320 on a trained model), when every
// probability is NaN and the draw falls to the last candidate, the least
// likely token. Temperatures this small are greedy decoding in all but
// name; "greedy" is the limit.
const MinTemperature = 1e-6

// pythiaLen is Pythia's memorization prefix and suffix length.
const pythiaLen = 32

// Where decoding chooses its tokens (Config.DecodeOn).
const (
	OnAuto   = "auto"
	OnHost   = "host"
	OnDevice = "device"
)

// Modes, Decodings and DecodeOnValues list the accepted values, for help
// texts.
var (
	Modes          = []string{ModeReference, ModeFixed, ModePythia}
	Decodings      = []string{DecodeGreedy, DecodeSample, DecodeBeam}
	DecodeOnValues = []string{OnAuto, OnHost, OnDevice}
	// knownSplits are the splits of docs.arrow.
	knownSplits = []string{"target", "control", "background", "validation"}
)

// Config is the [extract] table of an experiment spec.
type Config struct {
	// Mode is how prompts are cut from a document: reference (the end of
	// its training row), fixed (extract.prefix + extract.suffix tokens) or
	// pythia (32 + 32 tokens from the start of each document, not of each
	// training row); docs/ATTACKS.md has each.
	Mode string `toml:"mode" json:"mode"`
	// Prefix is the prompt length in tokens of the fixed mode.
	Prefix int `toml:"prefix" json:"prefix"`
	// Suffix is the number of true tokens to reproduce (and of tokens
	// generated) in the reference and fixed modes.
	Suffix int `toml:"suffix" json:"suffix"`
	// Decoding is greedy, sample or beam.
	Decoding string `toml:"decoding" json:"decoding"`
	// Temperature divides the logits before sampling.
	Temperature float64 `toml:"temperature" json:"temperature"`
	// TopK is the K of top-k sampling: draws only among the K most likely
	// tokens (and any tied with the K-th, as Hugging Face does); 0 means all.
	TopK int `toml:"top_k" json:"top_k"`
	// TopP is the P of nucleus sampling: draws from the smallest set of
	// most likely tokens whose probability reaches P, taken on the
	// distribution renormalized after top_k (Hugging Face's order:
	// temperature, top-k, top-p); 1 means all.
	TopP float64 `toml:"top_p" json:"top_p"`
	// DecodeOn is where decoding chooses its tokens from the logits:
	// sampling's draws, beam search's ranking and the scoring pass's
	// p_extract (the probability that the decoding scheme reproduces the
	// suffix). "host": the logits are copied to the host and worked there
	// in float64, the rows on every core; "device": where the model runs,
	// the logits staying there and a token or value a row coming back;
	// "auto", also when empty: device on a GPU, host on the CPU. Both
	// choose the same tokens (sampling with the same random numbers) but
	// where two sums within rounding of each other decide (the device sums
	// in another order); log-probabilities agree to about 1e-12, and
	// greedy's p_extract is the same bits. Greedy decoding takes its
	// argmax on the device either way.
	DecodeOn string `toml:"decode_on,omitempty" json:"decode_on,omitempty"`
	// Beams is the beam width of beam search.
	Beams int `toml:"beams" json:"beams"`
	// Seed is the seed of sampling's random numbers (a document's draws
	// depend on it and the document's doc_id alone, not on the batch).
	Seed int64 `toml:"seed" json:"seed"`
	// Device is where the attacked model (and the reference model) run,
	// for decoding and every scoring pass: "cpu", "cuda" or "cuda:N".
	// Empty: the spec's top-level device, else train.device.
	Device string `toml:"device,omitempty" json:"device,omitempty"`
	// BatchSize is the number of prompts decoded together; 0 = automatic:
	// a quarter of MemAvailable (on a GPU, of its memory) after the weights
	// (4 bytes a parameter; 2 for the linear layers' under extract.precision
	// bf16 or fp16), divided by 4·window·(2·layers·dim + vocab) bytes per
	// row (key/value cache plus one row of scoring logits), clamped to
	// [1, 64] (on a GPU [1, 512]).
	BatchSize int `toml:"batch_size" json:"batch_size"`
	// Splits are the document splits attacked: members ("target") and
	// non-members ("control") by default.
	Splits []string `toml:"splits" json:"splits"`
	// MaxDocs is the most documents attacked per split (the first by
	// doc_id); 0 means all.
	MaxDocs int `toml:"max_docs" json:"max_docs"`
	// MinKFraction is the k of Min-K%++ (0.2 = the 20 % least likely
	// tokens), which only extract can score (it needs the model's whole
	// next-token distribution), and of completions.arrow's mink column;
	// scores.parquet's Min-K% is recomputed from the token losses with
	// eval.mink_fraction.
	MinKFraction float64 `toml:"mink_fraction" json:"mink_fraction"`
	// Samples is the number of guesses per prompt (the extraction
	// benchmark's many guesses, Carlini et al. 2021 and 2023): with
	// decoding = "sample", that many draws, the prompt run once and its KV
	// cache shared by its draws; with "beam", the best that many beams
	// (samples <= beams); greedy has one guess. Above 1 the guesses go to
	// guesses.arrow beside completions.arrow, whose generated_ids is then
	// the guess the model finds most likely (highest seq_logprob).
	Samples int `toml:"samples" json:"samples,omitempty"`
	// Checkpoints are the checkpoints `memo run` attacks: "last" (the
	// default, also when unset: the newest, into completions.arrow), "all" (every one in checkpoints/,
	// which needs train.keep_checkpoints = 0) or a list of steps, e.g.
	// [100, 200] (likewise). Each checkpoint but the newest is attacked
	// beside itself and scored; memorization.parquet gathers them all.
	Checkpoints any `toml:"checkpoints" json:"checkpoints,omitempty"`
	// Reference is an optional reference model for the loss-difference attack: a run or checkpoint directory, or "hf:DIR" (a Hugging Face model), with the same tokenizer. Its per-document loss fills the ref_loss column.
	Reference string `toml:"reference" json:"reference"`
	// Precision is "fp32" (the default), "bf16" or "fp16": the attacked and reference models' linear layers hold their weights and compute their products in that dtype, and so does attention where libtorch has its fused kernel (2.1 and later: on a GPU, or a CPU built against a pip PyTorch); norms, the softmax over the vocabulary and the scores stay float32. fp16 needs a device whose libtorch multiplies float16 (not Debian's CPU libtorch).
	Precision string `toml:"precision" json:"precision,omitempty"`
	// RecallPrefix is the length in tokens of ReCaLL's non-member prefix
	// (Xie et al. 2024), the opening of the first control document (lowest
	// doc_id with that many tokens), recorded in completions.arrow's
	// metadata; the recall column is LL(x|prefix)/LL(x). At most half the
	// attack window is used, so that the document keeps the other half. 0
	// turns ReCaLL off (recall is NaN).
	RecallPrefix int `toml:"recall_prefix" json:"recall_prefix"`
	// GradNorm, when true, fills the grad_norm column with ‖∇θ L‖₂ of each window's mean
	// loss, a membership statistic. Off by default (grad_norm is NaN): it
	// costs a forward and a backward pass per document, about three
	// forward passes, several times what greedy decoding the same
	// document costs, so it would dominate a large attack.
	GradNorm bool `toml:"grad_norm" json:"grad_norm"`
	// KVBits is 16 (the exact fp32 cache), 8 or 4: the keys and values are
	// quantized group-wise (32 per group) in QuantSpec's hierarchical
	// layout, the 4-bit code being the upper half of the 8-bit one.
	KVBits int `toml:"kv_bits" json:"kv_bits,omitempty"`
	// Attention is exact, loki (top-k tokens ranked in a PCA space of the
	// keys; extract.loki) or sift (a per-prompt power-law threshold on the
	// attention probabilities; extract.sift), applied at decode steps.
	Attention string `toml:"attention" json:"attention,omitempty"`
	// Speculative is none or quantspec: greedy decoding drafted by the
	// same model with 4-bit weights and cache and verified by the exact
	// model (extract.quantspec); the tokens are plain greedy's.
	Speculative string `toml:"speculative" json:"speculative,omitempty"`
	// Approximation, when not empty, sets the keys above in one string,
	// over what they say on their own (kv_bits = 4 beside "kv8" is 8),
	// for sweeps: "exact", "kv8", "kv4", "loki-r<rank>-k<top_k>",
	// "sift-q<quantile>" or "quantspec-g<gamma>" (joined by "+" to
	// combine), e.g. "loki-r8-k0.25" sets attention, loki.rank, loki.top_k.
	Approximation string `toml:"approximation" json:"approximation,omitempty"`
	// Loki configures extract.attention = "loki".
	Loki LokiConfig `toml:"loki" json:"loki,omitzero"`
	// Sift configures extract.attention = "sift".
	Sift SiftConfig `toml:"sift" json:"sift,omitzero"`
	// QuantSpec configures extract.speculative = "quantspec".
	QuantSpec QuantSpecConfig `toml:"quantspec" json:"quantspec,omitzero"`
}

// DefaultConfig is the goldfish repository's attack: the reference mode,
// a 50-token suffix, greedy decoding, targets and controls.
func DefaultConfig() Config {
	c := Config{
		Mode: ModeReference, Prefix: 50, Suffix: 50, Decoding: DecodeGreedy,
		Temperature: 1, TopK: 0, TopP: 1, Beams: 4, Seed: 1234, BatchSize: 16,
		Splits: []string{"target", "control"}, MinKFraction: 0.2,
		RecallPrefix: 32, GradNorm: false,
		// Checkpoints unset is "last": a TOML array cannot be decoded over
		// a string default (go-toml keeps the string's type).
		Samples: 1,
	}
	defaultApprox(&c)
	return c
}

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// Validate checks every key and names the offending one in its error.
// CheckContext checks the prompt against a model's context.
func (c Config) Validate() error {
	c, err := c.Resolved()
	if err != nil {
		return err
	}
	if _, _, err := torchx.ParseDevice(c.Device); err != nil {
		return fmt.Errorf("extract.device = %q: %w", c.Device, err)
	}
	if _, err := precision.Parse(c.Precision, false); err != nil {
		return fmt.Errorf("extract.precision = %q: must be fp32, bf16 or fp16", c.Precision)
	}
	if !oneOf(c.Mode, Modes) {
		return fmt.Errorf("extract.mode = %q: must be one of %s", c.Mode, strings.Join(Modes, ", "))
	}
	if c.Mode == ModeFixed && c.Prefix < 1 {
		return fmt.Errorf("extract.prefix = %d: must be >= 1 in mode %q", c.Prefix, c.Mode)
	}
	if c.Prefix < 0 {
		return fmt.Errorf("extract.prefix = %d: must be >= 1 (mode %q does not use it)", c.Prefix, c.Mode)
	}
	if c.Mode != ModePythia && c.Suffix < 1 {
		return fmt.Errorf("extract.suffix = %d: must be >= 1", c.Suffix)
	}
	if !oneOf(c.Decoding, Decodings) {
		return fmt.Errorf("extract.decoding = %q: must be one of %s", c.Decoding, strings.Join(Decodings, ", "))
	}
	if !(c.Temperature > 0) || math.IsInf(c.Temperature, 1) {
		return fmt.Errorf("extract.temperature = %v: must be a finite number > 0", c.Temperature)
	}
	if c.Temperature < MinTemperature {
		return fmt.Errorf("extract.temperature = %v: must be >= %g (below it logit/T overflows and sampling draws the least likely token); decoding = \"greedy\" is the limit T → 0", c.Temperature, MinTemperature)
	}
	if c.TopK < 0 {
		return fmt.Errorf("extract.top_k = %d: must be >= 0 (0 = no limit)", c.TopK)
	}
	if math.IsNaN(c.TopP) || c.TopP <= 0 || c.TopP > 1 {
		return fmt.Errorf("extract.top_p = %v: must be in (0, 1] (1 = no limit)", c.TopP)
	}
	if c.DecodeOn != "" && !oneOf(c.DecodeOn, DecodeOnValues) {
		return fmt.Errorf("extract.decode_on = %q: must be one of %s", c.DecodeOn, strings.Join(DecodeOnValues, ", "))
	}
	if c.Beams < 1 || c.Beams > 64 {
		return fmt.Errorf("extract.beams = %d: must be between 1 and 64", c.Beams)
	}
	if c.BatchSize < 0 {
		return fmt.Errorf("extract.batch_size = %d: must be >= 1, or 0 for automatic", c.BatchSize)
	}
	if len(c.Splits) == 0 {
		return fmt.Errorf("extract.splits is empty: list at least one of %s", strings.Join(knownSplits, ", "))
	}
	for i, s := range c.Splits {
		if !oneOf(s, knownSplits) {
			return fmt.Errorf("extract.splits: %q: must be one of %s", s, strings.Join(knownSplits, ", "))
		}
		if oneOf(s, c.Splits[:i]) {
			return fmt.Errorf("extract.splits: %q listed twice", s)
		}
	}
	if err := c.validateGuesses(); err != nil {
		return err
	}
	if _, _, err := c.CheckpointSteps(); err != nil {
		return err
	}
	if c.MaxDocs < 0 {
		return fmt.Errorf("extract.max_docs = %d: must be >= 0 (0 = all)", c.MaxDocs)
	}
	if math.IsNaN(c.MinKFraction) || c.MinKFraction <= 0 || c.MinKFraction > 1 {
		return fmt.Errorf("extract.mink_fraction = %v: must be in (0, 1], e.g. 0.2", c.MinKFraction)
	}
	if c.RecallPrefix < 0 {
		return fmt.Errorf("extract.recall_prefix = %d: must be >= 0 (0 = no ReCaLL)", c.RecallPrefix)
	}
	return c.validateApprox()
}

// Lengths are the prefix and suffix lengths of the fixed-geometry modes;
// the reference mode's prefix depends on the document (prefix is 0).
func (c Config) Lengths() (prefix, suffix int) {
	switch c.Mode {
	case ModePythia:
		return pythiaLen, pythiaLen
	case ModeFixed:
		return c.Prefix, c.Suffix
	}
	return 0, c.Suffix
}

// ErrConfig marks errors caused by the configuration (a bad key, or a
// prompt that does not fit the model), not by the files or the machine.
var ErrConfig = errors.New("bad extract configuration")

// CheckContext checks that the prompt and the generated tokens fit a
// model with the given context length.
func (c Config) CheckContext(context int) error {
	return c.checkLimit(context, fmt.Sprintf("the model context %d", context))
}

// AttackWindow is how many leading tokens of a document an attack and its
// membership losses may use: one training row, block+1 tokens (block
// inputs, block targets), capped at the model context; block 0 means the
// model context. Past the trained row lie positions the model never
// trained at (a longer document continues in a new row with a fresh
// context), so a suffix there would understate what it memorized.
func AttackWindow(context, block int) int {
	if block <= 0 || block+1 >= context {
		return context
	}
	return block + 1
}

// CheckWindow is CheckContext for an attack window (AttackWindow) that may
// be shorter than the model context: its error names train.block when the
// trained row is the limit.
func (c Config) CheckWindow(window, context int) error {
	if window >= context {
		return c.CheckContext(context)
	}
	return c.checkLimit(window, fmt.Sprintf("the trained row of %d tokens (train.block + 1; model context %d)", window, context))
}

func (c Config) checkLimit(limit int, what string) error {
	p, s := c.Lengths()
	switch {
	case c.Mode == ModeReference && s >= limit:
		return fmt.Errorf("%w: extract.suffix = %d: must be below %s in mode %q (the prefix needs at least one token)", ErrConfig, s, what, c.Mode)
	case c.Mode != ModeReference && p+s > limit:
		return fmt.Errorf("%w: prefix %d + suffix %d = %d tokens exceed %s in mode %q", ErrConfig, p, s, p+s, what, c.Mode)
	}
	return nil
}

// Slug names the attack for a file name: the prompt geometry, the decoding
// and a digest of every setting that can change the completions (all of
// Config but BatchSize, plus extra, e.g. the data directory), e.g.
// "reference-s50.greedy.1a2b3c4d", "fixed-p50-s50.beam4.…" or
// "pythia.sample-t0.7-k40-p0.9-seed1.…". Different settings get different
// slugs, so attacks written side by side do not overwrite each other.
func (c Config) Slug(extra ...string) string {
	var geo string
	switch c.Mode {
	case ModeReference:
		geo = fmt.Sprintf("reference-s%d", c.Suffix)
	case ModeFixed:
		geo = fmt.Sprintf("fixed-p%d-s%d", c.Prefix, c.Suffix)
	default:
		geo = c.Mode
	}
	dec := c.Decoding
	switch c.Decoding {
	case DecodeBeam:
		dec = fmt.Sprintf("beam%d", c.Beams)
	case DecodeSample:
		dec = fmt.Sprintf("sample-t%g-k%d-p%g-seed%d", c.Temperature, c.TopK, c.TopP, c.Seed)
	}
	if r, err := c.Resolved(); err == nil {
		c = r
	}
	if c.approximate() {
		dec += "." + c.approxName()
	}
	if c.Precision != "" && c.Precision != precision.FP32 {
		dec += "." + c.Precision
	}
	k := c.recorded()
	k.BatchSize = 0
	if cuda, _, _ := torchx.ParseDevice(k.Device); !cuda {
		k.Device = "" // "cpu" is the default: the same completions
	}
	h := sha256.New()
	json.NewEncoder(h).Encode(k) // a hash.Hash does not fail; Config always encodes
	for _, e := range extra {
		fmt.Fprintf(h, "%q\n", e)
	}
	return fmt.Sprintf("%s.%s.%x", geo, dec, h.Sum(nil)[:4])
}
