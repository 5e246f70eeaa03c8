package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/model"
	"github.com/urfave/cli/v2"
)

// TestTableFlagNames: the flags extract and eval declared by hand before
// they were derived keep working under the same names, and every key a
// flag can hold has one, with its comment as help.
func TestTableFlagNames(t *testing.T) {
	for _, tc := range []struct {
		cmd  *cli.Command
		want []string
	}{
		{extractCommand(), []string{"mode", "prefix", "suffix", "decoding", "temperature", "top-k", "top-p", "beams", "samples", "seed",
			"batch-size", "splits", "max-docs", "mink-fraction", "recall-prefix", "grad-norm", "reference", "data", "model", "out", "threads", "set"}},
		{evalCommand(), []string{"bootstrap", "seed", "mink-fraction", "extractable-q", "fpr", "reference", "out"}},
	} {
		usage := map[string]string{}
		for _, f := range tc.cmd.Flags {
			if u, ok := f.(cli.DocGenerationFlag); ok {
				usage[f.Names()[0]] = u.GetUsage()
			}
		}
		for _, name := range tc.want {
			if _, ok := usage[name]; !ok {
				t.Errorf("memo %s has no --%s", tc.cmd.Name, name)
			}
		}
		table, cfg := tc.cmd.Name, any(extract.DefaultConfig())
		if table == "eval" {
			cfg = eval.DefaultConfig()
		}
		keys := flagKeys(table, reflect.TypeOf(cfg))
		if len(keys) < 6 {
			t.Fatalf("%s: %d keys with flags", table, len(keys))
		}
		for _, k := range keys {
			if u := usage[k.flag]; len(u) < 10 || strings.Contains(u, "`") {
				t.Errorf("--%s (%s): help %q, want the key's comment", k.flag, k.key, u)
			}
		}
	}
}

// TestSetTableFlags: each kind of flag lands in its field; flags not given
// leave the run's value.
func TestSetTableFlags(t *testing.T) {
	run := extract.DefaultConfig()
	run.Suffix, run.Seed = 32, 5
	var got extract.Config
	app := &cli.App{
		Flags: tableFlags("extract", extract.DefaultConfig()),
		Action: func(c *cli.Context) error {
			got = run
			setTableFlags(c, "extract", &got)
			return nil
		},
	}
	args := []string{"memo", "--mode", "fixed", "--top-k", "40", "--top-p", "0.9", "--seed", "99", "--splits", "target, validation", "--grad-norm"}
	if err := app.Run(args); err != nil {
		t.Fatal(err)
	}
	want := run
	want.Mode, want.TopK, want.TopP, want.Seed, want.Splits, want.GradNorm = "fixed", 40, 0.9, 99, []string{"target", "validation"}, true
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestFlagUsage(t *testing.T) {
	for _, tc := range []struct{ key, field, want string }{
		{"extract.beams", "Beams", "the beam width of beam search."},
		{"extract.top_k", "TopK", "the K of top-k sampling: draws only among"},
		{"extract.grad_norm", "GradNorm", "grad_norm, when true, fills the grad_norm column"},
		{"eval.reference", "Reference", "reference, when set, is another run directory"},
		{"extract.samples", "Samples", "the number of guesses per prompt"},
	} {
		if got := flagUsage(tc.key, tc.field); !strings.HasPrefix(got, tc.want) {
			t.Errorf("flagUsage(%s) = %q, want it to start %q", tc.key, got, tc.want)
		}
	}
}

// TestBenchFlagsFollowTheStruct: a bench flag that sets a spec key takes its
// name, type and help from the key's field, its default from the bench, and
// reads back into the same struct.
func TestBenchFlagsFollowTheStruct(t *testing.T) {
	defaults := model.Config{Preset: "tiny", Vocab: 512, KVHeads: 2}
	flags := benchFlags("model", defaults, benchKey{"preset", ""}, benchKey{"kv_heads", "(bench note)"}, benchKey{"untied", ""})
	want := []struct {
		name, usagePart string
		value           any
	}{
		{"preset", "one of nano, tiny", "tiny"},
		{"kv-heads", "key/value heads (grouped-query attention); 0 means Heads (bench note)", 2},
		{"untied", "untied, when true, gives the LM head", false},
	}
	if len(flags) != len(want) {
		t.Fatalf("%d flags, want %d", len(flags), len(want))
	}
	for i, w := range want {
		f := flags[i]
		if f.Names()[0] != w.name {
			t.Errorf("flag %d is --%s, want --%s", i, f.Names()[0], w.name)
		}
		if u := f.(cli.DocGenerationFlag).GetUsage(); !strings.Contains(u, w.usagePart) {
			t.Errorf("--%s help %q lacks %q", w.name, u, w.usagePart)
		}
		var got any
		switch f := f.(type) {
		case *cli.StringFlag:
			got = f.Value
		case *cli.IntFlag:
			got = f.Value
		case *cli.BoolFlag:
			got = f.Value
		}
		if got != w.value {
			t.Errorf("--%s default %v (%T), want %v", w.name, got, got, w.value)
		}
	}

	var read model.Config
	app := &cli.App{Flags: flags, Action: func(c *cli.Context) error {
		read = defaults
		setBenchFlags(c, "model", &read, "preset", "kv_heads", "untied")
		return nil
	}}
	if err := app.Run([]string{"bench", "--kv-heads", "4", "--untied"}); err != nil {
		t.Fatal(err)
	}
	if read.Preset != "tiny" || read.KVHeads != 4 || !read.Untied || read.Vocab != 512 {
		t.Errorf("read back %+v: want preset tiny (default), kv_heads 4, untied, vocab 512 untouched", read)
	}

	defer func() {
		if recover() == nil {
			t.Error("benchFlags with a key model.Config lacks did not panic")
		}
	}()
	benchFlags("model", defaults, benchKey{"no_such_key", ""})
}

// TestFirstSentence: a key doc's first sentence, not cut at "et al.".
func TestFirstSentence(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"the beam width of beam search.", "the beam width of beam search."},
		{"guesses (Carlini et al. 2021). More here.", "guesses (Carlini et al. 2021)."},
		{"a. b", "a. b"},
	} {
		if got := firstSentence(tc.in); got != tc.want {
			t.Errorf("firstSentence(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKeysAsFlags(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"extract.top_k = -1: must be >= 0", "--top-k -1: must be >= 0"},
		{`extract.decoding = "x": must be one of greedy`, `--decoding "x": must be one of greedy`},
		{"extract.samples = 9: beam search returns at most its 4 beams (extract.beams)", "--samples 9: beam search returns at most its 4 beams (--beams)"},
		{"no key here", "no key here"},
	} {
		if got := keysAsFlags("extract", tc.in); got != tc.want {
			t.Errorf("keysAsFlags(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
