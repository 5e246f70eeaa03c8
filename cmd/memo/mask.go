package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/lossyutf8"
	"github.com/memo-research/memo/loss"
	"github.com/urfave/cli/v2"
)

func init() {
	// --h is the goldfish context width (the paper's h). urfave/cli's default
	// help flag claims the alias -h, which collides with it, and its help
	// check reads any flag named h as a bool, so "--h 1" would print help.
	// Help stays on --help, for every command.
	cli.HelpFlag = &cli.BoolFlag{Name: "help", Usage: "show help"}
}

// maskFlagRanges is what each flag accepts, for one-line usage errors.
var maskFlagRanges = map[string]string{
	"strategy": "one of " + strings.Join(loss.Strategies, ", "),
	"k":        "an integer >= 2",
	"h":        "an integer >= 1",
	"start":    "an integer >= 0",
	"seed":     "a 64-bit integer",
	"exempt":   "comma-separated integer token ids",
}

func maskCommand() *cli.Command {
	return &cli.Command{
		Name:  "mask",
		Usage: "show which targets the goldfish loss drops",
		UsageText: "memo mask [--strategy S --k K --h H ...] --ids-json FILE|-\n" +
			"memo mask [--strategy S --k K --h H ...] --text FILE --tokenizer SPEC",
		Description: "With --ids-json, reads target token ids (a JSON array, or {\"ids\": [...]} as\n" +
			"memo tokenize prints) and prints only a JSON array of the dropped positions\n" +
			"(indexes into the ids). With --text, tokenizes\n" +
			"the file, prints it with dropped tokens marked [[like this]] and the drop rate.\n" +
			"The ids are taken as one row's targets, so hashed strategies keep the first h-1.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "strategy", Value: loss.StrategyHashTable, Usage: "goldfish strategy: " + strings.Join(loss.Strategies, ", ")},
			&cli.IntFlag{Name: "k", Value: 4, Usage: "drop about one target in `K` (>= 2)"},
			&cli.IntFlag{Name: "h", Value: 13, Usage: "context width `H` of the hashed strategies (>= 1)"},
			&cli.IntFlag{Name: "start", Usage: "first dropped position of the static strategy (>= 0)"},
			// A spec's goldfish.seed is its top-level seed unless set: the
			// mask a default run trains with.
			&cli.Int64Flag{Name: "seed", Value: experiments.Default().Seed, Usage: "seed of the random strategy and key of the rolling hash (a spec's goldfish.seed, which is its top-level seed unless set)"},
			&cli.StringFlag{Name: "exempt", Usage: "comma-separated token `IDS` the rolling strategy never drops (e.g. EOS)"},
			&cli.StringFlag{Name: "ids-json", Usage: "`FILE` holding target ids (a JSON array, or {\"ids\": [...]}), or - for stdin"},
			&cli.StringFlag{Name: "text", Usage: "text `FILE` to tokenize and show with dropped tokens marked"},
			&cli.StringFlag{Name: "tokenizer", Usage: "tokenizer `SPEC` for --text: gpt2, hf:PATH or a tokenizer.json path"},
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			if m := flagBadValue.FindStringSubmatch(err.Error()); m != nil && maskFlagRanges[m[2]] != "" {
				return usageError("mask: --%s %s: want %s", m[2], m[1], maskFlagRanges[m[2]])
			}
			return usageError("mask: %s", flagMessage("mask", c.Command.Flags, err))
		},
		Action: runMask,
	}
}

func maskConfig(c *cli.Context) (loss.Config, error) {
	cfg := loss.Config{
		Strategy: c.String("strategy"),
		K:        c.Int("k"),
		H:        c.Int("h"),
		Start:    c.Int("start"),
		Seed:     c.Int64("seed"),
	}
	bad := func(flag string, v any) error {
		return usageError("mask: --%s %v: want %s", flag, v, maskFlagRanges[flag])
	}
	if !strings.Contains(","+strings.Join(loss.Strategies, ",")+",", ","+cfg.Strategy+",") {
		return cfg, bad("strategy", fmt.Sprintf("%q", cfg.Strategy))
	}
	if cfg.K < 2 {
		return cfg, bad("k", cfg.K)
	}
	if cfg.H < 1 {
		return cfg, bad("h", cfg.H)
	}
	if cfg.Start < 0 {
		return cfg, bad("start", cfg.Start)
	}
	if c.IsSet("start") && cfg.Strategy != loss.StrategyStatic {
		return cfg, usageError("mask: --start applies to --strategy static only, not %q", cfg.Strategy)
	}
	if s := c.String("exempt"); s != "" {
		if cfg.Strategy != loss.StrategyRolling {
			return cfg, usageError("mask: --exempt applies to --strategy rolling only, not %q", cfg.Strategy)
		}
		var ids []int32
		for _, f := range strings.Split(s, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil || id < 0 {
				return cfg, usageError("mask: --exempt %q: %q is not a token id: want comma-separated integer ids >= 0 (e.g. --exempt 0,2)", s, strings.TrimSpace(f))
			}
			ids = append(ids, int32(id))
		}
		cfg.ExemptIDs = ids
	}
	if err := cfg.Validate(); err != nil { // the checks above should cover it
		return cfg, usageError("mask: %v", err)
	}
	return cfg, nil
}

func runMask(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageError("mask: unexpected argument %q: give input with --ids-json or --text", c.Args().First())
	}
	cfg, err := maskConfig(c)
	if err != nil {
		return err
	}
	m, err := loss.New(cfg)
	if err != nil {
		return usageError("mask: %v", err)
	}
	idsPath, textPath := c.String("ids-json"), c.String("text")
	switch {
	case idsPath != "" && textPath != "":
		return usageError("mask: give --ids-json or --text, not both")
	case idsPath != "":
		return maskIDs(c, m, idsPath)
	case textPath != "":
		return maskText(c, m, cfg, textPath, c.String("tokenizer"))
	}
	return usageError("mask: no input: give --ids-json FILE (or - for stdin) or --text FILE --tokenizer SPEC")
}

func maskIDs(c *cli.Context, m loss.Masker, path string) error {
	var r io.Reader = c.App.Reader
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return usageError("mask: --ids-json %s: %v", path, err)
		}
		defer f.Close()
		r = f
	}
	ids, err := loss.ParseIDsJSON(r)
	if err != nil {
		return usageError("mask: --ids-json %s: %v", path, err)
	}
	out, err := json.Marshal(loss.DroppedPositions(m, ids))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s\n", out)
	return err
}

func maskText(c *cli.Context, m loss.Masker, cfg loss.Config, path, spec string) error {
	if spec == "" {
		return usageError("mask: --text needs --tokenizer SPEC (gpt2, hf:PATH or a tokenizer.json path)")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return usageError("mask: --text %s: %v", path, err)
	}
	tok, err := data.LoadTokenizer(spec)
	if err != nil {
		return usageError("mask: --tokenizer %s: %v", spec, err)
	}
	ids, err := tok.Encode(string(raw))
	if err != nil {
		return fmt.Errorf("mask: tokenize %s: %w", path, err)
	}
	dropped := make([]bool, len(ids))
	m.Mask(ids, dropped)
	text, exact := loss.MarkDropped(ids, dropped, tok.Decode, "[[", "]]")
	if !exact {
		slog.Warn("some marks split a character the tokenizer spreads over several tokens; its bytes print as U+FFFD", "file", path)
		text = lossyutf8.String([]byte(text)) // standard output stays UTF-8
	}
	n := 0
	for _, d := range dropped {
		if d {
			n++
		}
	}
	rate := 0.0
	if len(ids) > 0 {
		rate = float64(n) / float64(len(ids))
	}
	_, err = fmt.Fprintf(c.App.Writer, "%s\n\n%s k=%d h=%d: dropped %d of %d tokens (%.2f%%; 1/k = %.2f%%)\n",
		text, cfg.Strategy, cfg.K, cfg.H, n, len(ids), 100*rate, 100/float64(cfg.K))
	return err
}
