package extract

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
)

func seq(from, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(from + i)
	}
	return out
}

func TestBuildPrompts(t *testing.T) {
	long := data.Doc{ID: 1, Title: "long", IDs: seq(0, 300)}
	mid := data.Doc{ID: 2, Title: "mid", IDs: seq(0, 80)}
	short := data.Doc{ID: 3, Title: "short", IDs: seq(0, 40)}
	docs := []data.Doc{long, mid, short}
	const ctx = 256
	for _, tc := range []struct {
		mode, name       string
		prefix, suffix   int
		wantPre, wantSuf [][2]int // [start, end) per doc; {-1,-1} = too short
	}{
		// reference: truncate to 256, the last 50 are the suffix.
		{ModeReference, "reference", 0, 50, [][2]int{{0, 206}, {0, 30}, {-1, -1}}, [][2]int{{206, 256}, {30, 80}, {-1, -1}}},
		// fixed 50 + 50 from the start.
		{ModeFixed, "fixed", 50, 50, [][2]int{{0, 50}, {-1, -1}, {-1, -1}}, [][2]int{{50, 100}, {-1, -1}, {-1, -1}}},
		// pythia: 32 + 32 whatever prefix and suffix say.
		{ModePythia, "pythia", 7, 9, [][2]int{{0, 32}, {0, 32}, {-1, -1}}, [][2]int{{32, 64}, {32, 64}, {-1, -1}}},
	} {
		cfg := DefaultConfig()
		cfg.Mode, cfg.Prefix, cfg.Suffix = tc.mode, tc.prefix, tc.suffix
		ps := BuildPrompts(cfg, docs, ctx)
		if len(ps) != len(docs) {
			t.Fatalf("%s: %d prompts for %d docs: documents were dropped", tc.name, len(ps), len(docs))
		}
		for i, p := range ps {
			if tc.wantPre[i][0] < 0 {
				if p.Status != StatusTooShort || len(p.Prefix) != 0 || p.Reason == "" {
					t.Errorf("%s: %s: status %q prefix %d reason %q, want too_short with a reason", tc.name, p.Doc.Title, p.Status, len(p.Prefix), p.Reason)
				}
				continue
			}
			wp := docs[i].IDs[tc.wantPre[i][0]:tc.wantPre[i][1]]
			ws := docs[i].IDs[tc.wantSuf[i][0]:tc.wantSuf[i][1]]
			if p.Status != StatusOK || !reflect.DeepEqual(p.Prefix, wp) || !reflect.DeepEqual(p.Suffix, ws) {
				t.Errorf("%s: %s: prefix %d..., suffix %d..., want %v and %v", tc.name, p.Doc.Title, len(p.Prefix), len(p.Suffix), tc.wantPre[i], tc.wantSuf[i])
			}
			if len(p.Window) != min(len(docs[i].IDs), ctx) {
				t.Errorf("%s: %s: window %d tokens, want the document cut to the context", tc.name, p.Doc.Title, len(p.Window))
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod func(*Config)
		key string
	}{
		{func(c *Config) { c.Mode = "carlini" }, "extract.mode"},
		{func(c *Config) { c.Mode, c.Prefix = ModeFixed, 0 }, "extract.prefix"},
		{func(c *Config) { c.Suffix = 0 }, "extract.suffix"},
		{func(c *Config) { c.Decoding = "nucleus" }, "extract.decoding"},
		{func(c *Config) { c.Temperature = 0 }, "extract.temperature"},
		// A flag takes inf, which the spec's parser refuses.
		{func(c *Config) { c.Temperature = math.Inf(1) }, "extract.temperature = +Inf: must be a finite number > 0"},
		// logit/T overflowed and sampling drew the least likely token.
		{func(c *Config) { c.Temperature = 1e-320 }, "extract.temperature = 1e-320: must be >= 1e-06"},
		{func(c *Config) { c.Prefix = -1 }, "extract.prefix = -1: must be >= 1 (mode \"reference\" does not use it)"},
		{func(c *Config) { c.TopK = -1 }, "extract.top_k"},
		{func(c *Config) { c.TopP = 1.5 }, "extract.top_p"},
		{func(c *Config) { c.Beams = 0 }, "extract.beams"},
		{func(c *Config) { c.BatchSize = -1 }, "extract.batch_size"},
		{func(c *Config) { c.Splits = []string{"members"} }, "extract.splits"},
		{func(c *Config) { c.Splits = nil }, "extract.splits"},
		{func(c *Config) { c.Splits = []string{"target", "target"} }, "extract.splits"},
		{func(c *Config) { c.MaxDocs = -2 }, "extract.max_docs"},
		{func(c *Config) { c.MinKFraction = 0 }, "extract.mink_fraction"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("want an error naming %s, got %v", tc.key, err)
		}
	}
	c := DefaultConfig()
	if err := c.CheckContext(50); err == nil {
		t.Error("suffix 50 in a context of 50 should be refused")
	}
	c.Mode, c.Prefix, c.Suffix = ModeFixed, 200, 100
	if err := c.CheckContext(256); err == nil || !strings.Contains(err.Error(), "300") {
		t.Errorf("fixed 200+100 in context 256: %v", err)
	}
	if err := c.CheckContext(300); err != nil {
		t.Error(err)
	}
}

// No prompts generate nothing, without a model. (The completions file's
// round trip is internal/runfiles' TestCompletionsRoundTrip.)
func TestGenerateAllNoPrompts(t *testing.T) {
	if _, err := generateAll(context.Background(), nil, DefaultConfig(), nil, true); err != nil {
		t.Errorf("no prompts: %v", err)
	}
}
