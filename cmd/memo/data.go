package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/runlock"
	"github.com/urfave/cli/v2"
)

func dataCommand() *cli.Command {
	return &cli.Command{
		Name:  "data",
		Usage: "fetch corpora, build a run's dataset, inspect one",
		Subcommands: []*cli.Command{
			{
				Name:      "build",
				Usage:     "build DIR/data (Arrow documents, tokens, tokenizer, report) from the [data] section of an experiment TOML",
				ArgsUsage: "<config.toml> [--out DIR]",
				Description: "Builds the [data] table (and takes the top-level name and seed) of the spec, which is\n" +
					"checked whole as `memo run` checks it:\n" +
					"  sources = [\"opticks\"]         opticks, moby-dick, brown, sotu, kjv, txt:DIR, jsonl:FILE[#field],\n" +
					"                                parquet:FILE[#column], arrow:FILE[#column]; jsonl FILE may be .gz, .zst\n" +
					"                                or a directory of them\n" +
					"  target_sources = []           draw targets and controls only from these sources\n" +
					"  tokenizer = \"bpe:4096\"        bpe:N (trained on the corpus), gpt2, hf:PATH/tokenizer.json\n" +
					"  targets = 50, controls = 50, validation = 50, background = -1 (all remaining)\n" +
					"  repetitions = 16              or repetition_groups = [1, 2, 4, 8, 16] (targets split evenly)\n" +
					"  background_passes = 1\n" +
					"  chunk_tokens = 128            cut documents into chunks of at most N tokens (0 = whole)\n" +
					"  min_tokens = 100              shorter documents are rejected and reported by name\n" +
					"  dedup_words = 20              reject documents sharing a 20-word passage with an earlier one\n" +
					"  dedup_tokens = 0              L > 0: cut every repeated span of >= L tokens beyond its first occurrence\n" +
					"  layout = \"padded\"             padded (one document per row) or packed (EOS-separated)\n" +
					"  seed = 1234, cache_dir = \"\"   cache default: $MEMO_CACHE or ~/.cache/memo\n" +
					"Built-in corpora other than opticks need `memo data fetch` first.",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Usage: "run `DIR` to write DIR/data into (default runs/<name>, name from the TOML or its file name)"},
				},
				Action: runDataBuild,
			},
			{
				Name:      "inspect",
				Usage:     "print counts, split sizes, repetition counts, a token-length histogram and examples of a built dataset",
				ArgsUsage: "<run dir, its data/, or a dataset-cache entry (memo data ls)>",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "examples", Value: 2, Usage: "show `N` example documents per split"},
				},
				Action: runDataInspect,
			},
			{
				Name:      "ls",
				Usage:     "list the shared dataset cache (CACHE/datasets): key, size, runs linked, documents, created, tokenizer, sources",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "cache", Usage: "cache `DIR` (default $MEMO_CACHE or ~/.cache/memo)"},
				},
				Action: runDataLs,
			},
			{
				Name:  "gc",
				Usage: "remove dead builders' leftovers and damaged entries from the dataset cache; --unused and --all remove more",
				Description: "Runs keep their own hard links (or copies) of a dataset's files: removing a cache entry\n" +
					"never breaks a run, it only makes the next build of that key build again.",
				ArgsUsage: " ",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "cache", Usage: "cache `DIR` (default $MEMO_CACHE or ~/.cache/memo)"},
					&cli.BoolFlag{Name: "unused", Usage: "also remove entries no run directory links to"},
					&cli.BoolFlag{Name: "all", Usage: "remove every entry not in use, and the trained tokenizers"},
					&cli.BoolFlag{Name: "dry-run", Usage: "print what would be removed, remove nothing"},
				},
				Action: runDataGC,
			},
			{
				Name:      "fetch",
				Usage:     "download the pinned corpora and GPT-2 tokenizer files into the cache, checking sha256",
				ArgsUsage: "[" + strings.Join(data.FetchNames(), " ") + "] (default: all)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "cache", Usage: "cache `DIR` (default $MEMO_CACHE or ~/.cache/memo)"},
				},
				Action: runDataFetch,
			},
		},
	}
}

// readDataConfig reads the [data] table (and the top-level name and
// seed, the seed filling data.seed when the table sets none) of an
// experiment spec, through the spec's one reader: the whole file is
// checked as memo run checks it.
func readDataConfig(path string) (data.Config, string, error) {
	spec, err := experiments.Parse(path)
	if err != nil {
		return data.Config{}, "", usageError("data build: %v", err)
	}
	if spec.IsSweep() {
		// Built here, [sweep] went unread: the base's data alone, into
		// runs/NAME, where memo sweep then refused to put its points.
		return data.Config{}, "", usageError("data build: %s is a sweep (it has [sweep] or [[sweep_points]]): build a point's data from its spec, RUNS/%s/specs/POINT.toml, which memo sweep --slurm writes, or let memo sweep build each", path, spec.Name)
	}
	return spec.Data, spec.Name, nil
}

func runDataBuild(c *cli.Context) error {
	// urfave/cli stops at the first argument, so "build x.toml --out DIR"
	// (the documented order) arrives here as three arguments.
	args, out, outSet := c.Args().Slice(), c.String("out"), c.IsSet("out")
	for i := 0; i < len(args); i++ {
		if a := args[i]; a == "--out" || a == "-out" {
			if i+1 == len(args) {
				return usageError("data build: --out needs a directory")
			}
			out, outSet = args[i+1], true
			args = append(args[:i:i], args[i+2:]...)
			i--
		} else if v, ok := strings.CutPrefix(a, "--out="); ok {
			out, outSet = v, true
			args = append(args[:i:i], args[i+1:]...)
			i--
		}
	}
	if outSet && strings.TrimSpace(out) == "" {
		// Read as "no --out", it built into runs/NAME unasked.
		return usageError("data build: --out is empty: want a run DIR (data goes into DIR/data), or leave --out out for runs/NAME")
	}
	if len(args) != 1 {
		return usageError("data build: want one argument, the experiment TOML (got %q)", args)
	}
	cfg, name, err := readDataConfig(args[0])
	if err != nil {
		return err
	}
	given := out != ""
	if !given {
		out = filepath.Join("runs", name)
	}
	if err := checkDataOut(out, name, given, cfg); err != nil {
		return err
	}
	// The run's lock, as memo run holds it: a build into a run training
	// (or a second build) rebuilt its data/ under it.
	created := missingDirs(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("data build: %w", err)
	}
	lock, err := runlock.AcquireStaleAfter(out, experiments.RunLockStale)
	if err != nil {
		return fmt.Errorf("data build: %w", err)
	}
	defer atomicfile.AtInterrupt(func() { lock.Release() })()
	defer lock.Release()
	if err := data.Build(c.Context, cfg, out); err != nil {
		if len(created) > 0 {
			// A refused build leaves none of the directories it made
			// (Remove takes only empty ones: nothing written is lost).
			lock.Release()
			_ = os.Remove(filepath.Join(out, "data"))
			for _, dir := range created {
				_ = os.Remove(dir)
			}
		}
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(out, "data"))
	return nil
}

// missingDirs lists dir and each of its parents that does not exist yet,
// dir first: the directories MkdirAll(dir) would make.
func missingDirs(dir string) []string {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			return missing
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			return missing
		}
	}
}

func runDataFetch(c *cli.Context) error {
	names := c.Args().Slice()
	for _, n := range names {
		if !contains(data.FetchNames(), n) {
			return usageError("data fetch: unknown corpus %q: want one of %s", n, strings.Join(data.FetchNames(), ", "))
		}
	}
	cache, err := cacheDir(c, "data fetch")
	if err != nil {
		return err
	}
	return data.Fetch(c.Context, cache, names)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func runDataInspect(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("data inspect: want one argument, a run directory (got %d)", c.NArg())
	}
	if n := c.Int("examples"); n < 0 {
		return usageError("data inspect: --examples %d: want >= 0", n)
	}
	// A run, its data/ or a dataset-cache entry (memo data ls lists them),
	// as memo index takes them.
	ds, err := openDatasetArg(c.Args().First(), "data inspect")
	if err != nil {
		return err
	}
	rep := ds.Report()
	fmt.Fprintf(stdout, "dataset %s\n", ds.Dir())
	fmt.Fprintf(stdout, "tokenizer %s: vocab %d, eos %d; layout %s; seed %d\n", rep.Tokenizer, rep.VocabSize, rep.EOS, rep.Layout, rep.Config.Seed)
	fmt.Fprintln(stdout, "sources:")
	for _, name := range sortedKeys(rep.Sources) {
		s := rep.Sources[name]
		fmt.Fprintf(stdout, "  %-24s documents %6d  chunks %7d  kept %7d  rejected %5d  tokens %9d\n", name, s.Documents, s.Chunks, s.Kept, s.Rejected, s.Tokens)
	}
	fmt.Fprintln(stdout, "splits:")
	for _, s := range []string{data.SplitTarget, data.SplitControl, data.SplitValidation, data.SplitBackground} {
		fmt.Fprintf(stdout, "  %-11s %6d docs %9d tokens\n", s, rep.Splits[s], rep.SplitTokens[s])
	}
	fmt.Fprintf(stdout, "  unused      %6d docs (background limited by data.background)\n", rep.Unused)
	fmt.Fprintf(stdout, "training stream: %d tokens (repetitions and passes included)\n", rep.TrainTokens)
	if rep.DedupTokens != nil {
		fmt.Fprintln(stdout, rep.DedupTokens)
	}
	reps := sortedKeys(rep.Repetitions)
	sort.Slice(reps, func(i, j int) bool { a, _ := strconv.Atoi(reps[i]); b, _ := strconv.Atoi(reps[j]); return a < b })
	fmt.Fprint(stdout, "targets by repetitions:")
	for _, r := range reps {
		fmt.Fprintf(stdout, " %sx:%d", r, rep.Repetitions[r])
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "rejected: %d", len(rep.Rejected))
	for _, k := range sortedKeys(rep.RejectedBy) {
		fmt.Fprintf(stdout, "  %s: %d", k, rep.RejectedBy[k])
	}
	fmt.Fprintln(stdout)
	for i, r := range rep.Rejected {
		if i == 10 {
			fmt.Fprintf(stdout, "  ... %d more in %s\n", len(rep.Rejected)-10, filepath.Join(ds.Dir(), "report.json"))
			break
		}
		fmt.Fprintf(stdout, "  %s %q: %s\n", r.Source, r.Title, r.Reason)
	}
	docs, err := ds.Docs("")
	if err != nil {
		return err
	}
	printHistogram(docs)
	n := c.Int("examples")
	for _, s := range []string{data.SplitTarget, data.SplitControl, data.SplitValidation, data.SplitBackground} {
		shown := 0
		for _, d := range docs {
			if d.Split != s || shown >= n {
				continue
			}
			shown++
			text := d.Text
			if len(text) > 240 {
				cut := 240
				for cut > 0 && !utf8.RuneStart(text[cut]) {
					cut-- // never split a character
				}
				text = text[:cut] + "…"
			}
			fmt.Fprintf(stdout, "\n[%s] doc %d %s %q (%d tokens, %dx)\n%s\n", s, d.ID, d.Source, d.Title, len(d.IDs), d.Repetitions, strings.TrimSpace(text))
		}
	}
	return nil
}

// printHistogram shows document lengths in tokens in at most ten
// equal-width bins, from the shortest to the longest.
func printHistogram(docs []data.Doc) {
	if len(docs) == 0 {
		return
	}
	lo, hi := len(docs[0].IDs), len(docs[0].IDs)
	for _, d := range docs {
		lo, hi = min(lo, len(d.IDs)), max(hi, len(d.IDs))
	}
	const maxBins = 10
	width := max(1, (hi-lo+maxBins)/maxBins) // ⌈(hi−lo+1)/10⌉
	bins := (hi-lo)/width + 1                // no bin past hi
	counts := make([]int, bins)
	most := 0
	for _, d := range docs {
		b := min((len(d.IDs)-lo)/width, bins-1)
		counts[b]++
		most = max(most, counts[b])
	}
	fmt.Fprintln(stdout, "document length (tokens):")
	for b, n := range counts {
		bar := strings.Repeat("#", (n*50+most-1)/most)
		fmt.Fprintf(stdout, "  %6d-%-6d %7d %s\n", lo+b*width, min(lo+(b+1)*width-1, hi), n, bar)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkDataOut refuses to replace a dataset another spec built: out/data
// of a run (its config.toml or checkpoints/ trained on it) or any complete
// build (report.json) is rebuilt only from the same [data] settings, which
// make the same files. Anything else would leave a run whose model never
// saw the documents later commands attack as its members. A folder of runs
// (a runs root, a sweep's directory) is refused too: data put there is no
// run's, and `memo run` would never find it (name is the spec's, for the
// run DIR the message suggests).
// outFlag names data build's output flag in a refusal: "--out" as typed,
// or "the default --out" when none was given (a review found a refusal
// of runs/NAME reading as if the user had typed it).
func outFlag(given bool) string {
	if given {
		return "--out"
	}
	return "the default --out"
}

func checkDataOut(out, name string, given bool, cfg data.Config) error {
	arg := outFlag(given) + " " + out
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return usageError("data build: %s is a file: want a run DIR (data goes into DIR/data)", arg)
	}
	if what := folderOfRuns(out); what != "" {
		return usageError("data build: %s %s: data goes into a run's own DIR/data; name one, such as --out %s", arg, what, filepath.Join(out, name))
	}
	if err := outguard.Place("data build: "+outFlag(given), out); err != nil {
		return err
	}
	if where := outguard.Inside(out, data.ResolveCacheDir(""), data.ResolveCacheDir(cfg.CacheDir)); where != "" {
		return usageError("data build: %s is in %s; a run's data never goes there: name a run DIR elsewhere", arg, where)
	}
	report := filepath.Join(out, "data", "report.json")
	raw, err := os.ReadFile(report)
	if err != nil {
		if outguard.IsRunDir(out) || outguard.Exists(filepath.Join(out, checkpoint.DirName)) {
			if outguard.Exists(filepath.Join(out, "data")) {
				return usageError("data build: %s is a run directory whose data/ is incomplete or damaged (no %s): rerun `memo run` on its spec, or choose another DIR", arg, report)
			}
			return trainedOn(out, arg, cfg)
		}
		return nil
	}
	var rep struct {
		Config json.RawMessage `json:"config"`
	}
	want, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	var had data.Config
	if json.Unmarshal(raw, &rep) != nil || json.Unmarshal(rep.Config, &had) != nil {
		return usageError("data build: %s is not a report memo data build wrote: choose another --out DIR", report)
	}
	got, err := json.Marshal(had)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return usageError("data build: %s holds a dataset built from other [data] settings (see %s): choose another --out DIR, or delete it first", filepath.Join(out, "data"), report)
	}
	if outguard.Exists(filepath.Join(out, checkpoint.DirName)) {
		// Built again, a source file changed since gives other documents:
		// memo extract and eval then scored the model on targets it
		// never saw, in the run's own results.
		return usageError("data build: %s already holds the dataset its checkpoints were trained on (%s): building it again would replace it, with other documents if a source changed since; there is nothing to build (name another --out DIR for a new dataset)", arg, filepath.Join(out, "data"))
	}
	return nil
}

// trainedOn refuses to build data/ anew in a run directory whose data/ is
// gone unless cfg is the [data] table its config.toml records: its
// checkpoints were trained on that dataset, and later commands would take
// the new one for their members. Checkpoints without a config.toml say
// nothing of their data, so nothing is built beside them.
func trainedOn(out, arg string, cfg data.Config) error {
	run, ok, err := experiments.ReadRun(out)
	if err != nil {
		return configError(err)
	}
	if !ok {
		if outguard.Exists(filepath.Join(out, checkpoint.DirName)) {
			return usageError("data build: %s holds checkpoints/ but no config.toml saying which data they were trained on: choose another DIR", arg)
		}
		return nil
	}
	if !sameDataConfig(run.Data, cfg) {
		return usageError("data build: %s is a run trained on other [data] settings (see its config.toml): choose another DIR, or rerun `memo run` on its spec to rebuild its data/", arg)
	}
	return nil
}

// sameDataConfig compares two [data] tables as JSON, with an empty list
// and an absent one alike (config.toml writes [] where a spec left a
// key out).
func sameDataConfig(a, b data.Config) bool {
	canon := func(c data.Config) []byte {
		v := reflect.ValueOf(&c).Elem()
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Slice && f.Len() == 0 && f.CanSet() {
				f.Set(reflect.Zero(f.Type()))
			}
		}
		raw, _ := json.Marshal(c)
		return raw
	}
	return bytes.Equal(canon(a), canon(b))
}

// folderOfRuns says what dir is when it is a folder of runs rather than a
// run — a sweep's directory, or a folder holding runs or sweeps (up to
// three named) — and "" otherwise, or when dir holds a config.toml or
// data/ of its own.
func folderOfRuns(dir string) string {
	if outguard.IsRunDir(dir) || outguard.Exists(filepath.Join(dir, "data")) {
		return ""
	}
	if outguard.Exists(filepath.Join(dir, experiments.SweepIndexFile)) {
		return "is a sweep's directory (it holds " + experiments.SweepIndexFile + "; its points are the runs)"
	}
	var runs []string
	ents, _ := os.ReadDir(dir) // unreadable: the build's own error says why
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if e.IsDir() && (outguard.IsRunDir(sub) || outguard.Exists(filepath.Join(sub, experiments.SweepIndexFile))) {
			if len(runs) == 3 {
				runs = append(runs, "…")
				break
			}
			runs = append(runs, e.Name())
		}
	}
	if len(runs) == 0 {
		return ""
	}
	return "holds runs (" + strings.Join(runs, ", ") + "), not a run's files"
}
