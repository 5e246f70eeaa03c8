package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/data/tokindex"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/loss"
)

func indexCommand() *cli.Command {
	where := "DIR is a run directory, its data/ or a dataset-cache entry (`memo data ls`)."
	return &cli.Command{
		Name:  "index",
		Usage: "count how often a window of tokens occurs in a dataset's training corpus (a suffix array)",
		Subcommands: []*cli.Command{
			{
				Name:      "build",
				Usage:     "index the training documents of a built dataset (beside its cache entry, else its data/)",
				ArgsUsage: "DIR",
				Description: "Writes tokens.idx: the training documents once each (a target weighed by its\n" +
					"repetitions), a suffix array over them, the tokenizer and a digest of the dataset's\n" +
					"files; progress on stderr. " + where,
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "max-window", Value: tokindex.DefaultMaxWindow, Usage: "the longest window the index answers, in `TOKENS`"},
				},
				Action: runIndexBuild,
			},
			{
				Name:      "count",
				Usage:     "count a text on stdin (tokenized as the corpus was, so a leading space counts, and a trailing newline: use printf or echo -n) or --ids-json ids in DIR's index",
				ArgsUsage: "DIR",
				Description: "Prints the count (each training document counted as often as an epoch holds it)\n" +
					"and the occurrences (positions); --json prints {\"count\": N, ...}. --random N\n" +
					"times N counts of random windows of the corpus instead. " + where,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "ids-json", Usage: "stdin is token ids, not text: {\"ids\": [...]} as memo tokenize prints, or a JSON array (a switch: give the file on stdin, < FILE)"},
					&cli.BoolFlag{Name: "json", Usage: "print JSON"},
					&cli.BoolFlag{Name: "locate", Usage: "also list where: doc_id and token offset of each occurrence"},
					&cli.IntFlag{Name: "limit", Value: 100, Usage: "list at most `N` occurrences with --locate (0: all)"},
					&cli.IntFlag{Name: "random", Usage: "time `N` counts of random windows of the corpus (stdin unread)"},
					&cli.IntFlag{Name: "window", Value: 32, Usage: "with --random: windows of `TOKENS`"},
					&cli.Int64Flag{Name: "seed", Value: 1, Usage: "with --random: the windows' seed"},
				},
				Action: runIndexCount,
			},
		},
	}
}

// indexDataset opens the dataset named by a command's one argument.
func indexDataset(c *cli.Context, cmd string) (*data.Dataset, error) {
	if c.NArg() != 1 {
		hint := ""
		if cmd == "count" && c.Bool("ids-json") && c.NArg() == 2 {
			hint = "; --ids-json is a switch here: the ids come on stdin (memo index count DIR --ids-json < FILE)"
		}
		return nil, usageError("index %s: want one argument, a run directory, its data/ or a dataset-cache entry (got %q)%s", cmd, c.Args().Slice(), hint)
	}
	return openDatasetArg(c.Args().First(), "index "+cmd)
}

// openDatasetArg opens the dataset of dir: a dataset directory itself (a
// run's data/, a cache entry) or a run directory holding data/.
func openDatasetArg(dir, what string) (*data.Dataset, error) {
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
		dir = filepath.Join(dir, "data")
	}
	ds, err := data.OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usageError("%s: %v", what, err)
	}
	return ds, err
}

func runIndexBuild(c *cli.Context) error {
	if w := c.Int("max-window"); w < 1 {
		return usageError("index build: --max-window %d: want >= 1", w)
	}
	ds, err := indexDataset(c, "build")
	if err != nil {
		return err
	}
	path := tokindex.PathFor(ds)
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		// The rename over it would fail after the whole build.
		return usageError("index build: %s is a directory, not an index file: remove it first", path)
	}
	st, err := tokindex.BuildDataset(ds, path, c.Int("max-window"), os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d documents, %d tokens (%d with repetitions), %d partitions (largest %d suffixes), %.1f s\n",
		path, st.Docs, st.Tokens, st.Weighted, st.Partitions, st.LargestPartition, st.Seconds)
	return nil
}

func runIndexCount(c *cli.Context) error {
	if err := atLeast(c, "index count", 0, "limit", "random"); err != nil {
		return err
	}
	if err := atLeast(c, "index count", 1, "window"); err != nil {
		return err
	}
	// A flag of another mode was dropped without a word.
	for _, f := range []struct{ flag, needs string }{{"window", "random"}, {"seed", "random"}, {"limit", "locate"}} {
		if c.IsSet(f.flag) && !c.IsSet(f.needs) {
			return usageError("index count: --%s is --%s's setting: add --%s, or leave --%s out", f.flag, f.needs, f.needs, f.flag)
		}
	}
	for _, f := range []string{"ids-json", "locate"} {
		if c.IsSet(f) && c.Int("random") > 0 {
			return usageError("index count: --%s counts a window from stdin; --random draws its own windows: give one of them", f)
		}
	}
	ds, err := indexDataset(c, "count")
	if err != nil {
		return err
	}
	ix, err := tokindex.OpenDataset(ds)
	if err != nil {
		return err
	}
	defer ix.Close()
	if n := c.Int("random"); n > 0 {
		return countRandom(c, ix, n)
	}
	q, err := readQuery(c, ds)
	if err != nil {
		return err
	}
	// A pointer, so that --locate with no occurrence prints "locations":
	// [] (omitempty dropped the empty list) and without it none at all.
	out := struct {
		tokindex.Count
		Locations *[]tokindex.Occurrence `json:"locations,omitempty"`
	}{}
	if c.Bool("locate") {
		var locs []tokindex.Occurrence
		locs, out.Count, err = ix.Locate(q, c.Int("limit"))
		if locs == nil {
			locs = []tokindex.Occurrence{}
		}
		out.Locations = &locs
	} else {
		out.Count, err = ix.Count(q)
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSONLine(c, out)
	}
	fmt.Fprintf(stdout, "count %d (occurrences %d) of a %d-token window\n", out.Count.Count, out.Occurrences, len(q))
	if out.Locations == nil {
		return nil
	}
	for _, o := range *out.Locations {
		fmt.Fprintf(stdout, "doc_id %d offset %d repetitions %d\n", o.DocID, o.Offset, o.Reps)
	}
	return nil
}

// readQuery reads the window: stdin's text in the corpus's tokenizer, or
// token ids (loss.ParseIDsJSON: {"ids": [...]} or a bare array).
func readQuery(c *cli.Context, ds *data.Dataset) ([]int32, error) {
	in, err := io.ReadAll(c.App.Reader)
	if err != nil {
		return nil, fmt.Errorf("index count: read stdin: %w", err)
	}
	if !c.Bool("ids-json") {
		tok, err := ds.Tokenizer()
		if err != nil {
			return nil, err
		}
		ids, err := tok.Encode(string(in))
		if err != nil {
			return nil, fmt.Errorf("index count: %w", err)
		}
		if len(ids) == 0 {
			return nil, usageError("index count: stdin holds no text to count")
		}
		if bytes.HasSuffix(in, []byte("\n")) {
			// echo's newline is part of the window, which then seldom
			// occurs: a count of 0 that reads as a finding.
			slog.Warn("index count: the text ends with a newline, counted as part of the window (printf or echo -n leave it out)")
		}
		return ids, nil
	}
	ids, err := loss.ParseIDsJSON(bytes.NewReader(in))
	if err != nil {
		return nil, usageError("index count --ids-json: stdin: %v", err)
	}
	for i, id := range ids {
		if int(id) >= ds.Report().VocabSize {
			return nil, usageError("index count --ids-json: ids[%d] = %d is outside the vocabulary of %d ids", i, id, ds.Report().VocabSize)
		}
	}
	return ids, nil
}

// countRandom times n counts of windows drawn from the corpus itself
// (positions uniform over the stream, cut short where a document ends).
func countRandom(c *cli.Context, ix *tokindex.Index, n int) error {
	h := ix.Header()
	if w := c.Int("window"); w > h.MaxWindow {
		// Windows cut short at a document's end passed, and the line
		// claimed windows "of up to" a length the index cannot answer.
		return usageError("index count: --window %d: the index answers windows of at most %d tokens (its --max-window)", w, h.MaxWindow)
	}
	rng := rand.New(rand.NewPCG(uint64(c.Int64("seed")), 0x696e646578))
	times := make([]float64, 0, n)
	var sum int64
	for len(times) < n {
		w := ix.Window(rng.Int64N(h.Stream), c.Int("window"))
		if len(w) == 0 {
			continue
		}
		t0 := time.Now()
		cnt, err := ix.Count(w)
		if err != nil {
			return err
		}
		times = append(times, float64(time.Since(t0).Microseconds())/1000)
		sum += cnt.Count
	}
	slices.Sort(times)
	q := func(p float64) float64 { return times[int(p*float64(len(times)-1))] }
	out := struct {
		Queries  int     `json:"queries"`
		Window   int     `json:"window"`
		Tokens   int64   `json:"tokens"`
		MeanHits float64 `json:"mean_count"`
		Median   float64 `json:"median_ms"`
		P90      float64 `json:"p90_ms"`
		Max      float64 `json:"max_ms"`
	}{n, c.Int("window"), h.Tokens, float64(sum) / float64(n), q(0.5), q(0.9), times[len(times)-1]}
	if c.Bool("json") {
		return writeJSONLine(c, out)
	}
	fmt.Fprintf(stdout, "%d random windows of up to %d tokens over %d tokens: median %.3f ms, p90 %.3f ms, max %.3f ms (mean count %.1f)\n",
		out.Queries, out.Window, out.Tokens, out.Median, out.P90, out.Max, out.MeanHits)
	return nil
}

// evalCounter is memo eval --counts DIR's counter over DIR's index (nil
// without the flag). ownSummary says the scores replace the run's own
// summary.json, which only the run's own corpus may count.
func evalCounter(c *cli.Context, runDir string, ownSummary bool) (*eval.Counter, func(), error) {
	if c.String("counts") == "" {
		// The run's own corpus when it is indexed, as the run's eval stage
		// counts: a summary rewritten without its by_corpus_count would
		// lose what the run had.
		return experiments.IndexedCorpusCounter(runDir)
	}
	ds, err := openDatasetArg(c.String("counts"), "eval --counts")
	if err != nil {
		return nil, nil, err
	}
	ix, err := tokindex.OpenDataset(ds)
	if err != nil {
		return nil, nil, err
	}
	// The completions' ids are the run's tokenizer's: counted in a corpus
	// of another tokenizer they are other text, and the counts meaningless
	// (the vocabulary-size check alone let bpe:300 ids count in a bpe:400
	// corpus, 0 where the text appeared 5 times).
	if own, err := data.Open(runDir); err == nil {
		id, err := tokindex.DatasetIdentity(own)
		if err == nil && id.Tokenizer != ix.Header().Tokenizer {
			theirs := ix.Header().Tokenizer
			ix.Close()
			return nil, nil, usageError("eval --counts %s: its corpus is tokenized by %s, the completions of %s by %s; a window's ids would be counted as other text: count against a corpus built with the run's tokenizer", c.String("counts"), theirs, runDir, id.Tokenizer)
		}
		// Another corpus's counts in the run's own summary.json would read
		// as how often the run trained on each target.
		if err == nil && ownSummary && id.Digest != ix.Header().Digest {
			ix.Close()
			return nil, nil, usageError("eval --counts %s: not the corpus %s trained on, whose summary.json holds its own corpus's counts: give --out DIR outside the run for counts in another corpus", c.String("counts"), runDir)
		}
	} else {
		slog.Warn("eval --counts: the completions are of no run whose tokenizer memo can compare with the counted corpus's; the counts hold only if they share it", "counts", c.String("counts"), "tokenizer", ix.Header().Tokenizer)
	}
	return experiments.CounterOf(ds, ix), func() { ix.Close() }, nil
}
