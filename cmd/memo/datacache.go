package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/data"
)

// cacheDir is --cache, else MEMO_CACHE, else the default cache
// (data.ResolveCacheDir); a path there that is not a directory is refused,
// named with cmd.
func cacheDir(c *cli.Context, cmd string) (string, error) {
	dir := data.ResolveCacheDir(c.String("cache"))
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return "", usageError("%s: the cache %s is not a directory (--cache or MEMO_CACHE names a directory)", cmd, typedCache(c, dir))
	}
	return dir, nil
}

// typedCache is the cache as the user gave it (--cache, else MEMO_CACHE),
// for a message: dir, its absolute form, otherwise.
func typedCache(c *cli.Context, dir string) string {
	if s := c.String("cache"); s != "" {
		return s
	}
	if s := os.Getenv("MEMO_CACHE"); s != "" {
		return s
	}
	return dir
}

// existingCache is cacheDir for a command that only reads or prunes a
// cache: a --cache that does not exist is refused too (a typo would list
// an empty one).
func existingCache(c *cli.Context, cmd string) (string, error) {
	dir, err := cacheDir(c, cmd)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err != nil && c.IsSet("cache") {
		return "", usageError("%s: --cache %s does not exist", cmd, typedCache(c, dir))
	}
	return dir, nil
}

func runDataLs(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageError("data ls: takes no arguments (got %q); the cache is --cache DIR", c.Args().Slice())
	}
	cache, err := existingCache(c, "data ls")
	if err != nil {
		return err
	}
	ents, err := data.ListCache(cache)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dataset cache %s: %d entries\n", cache, len(ents))
	defer printTokenizers(cache)
	if len(ents) == 0 {
		return nil
	}
	fmt.Fprintf(stdout, "%-24s %10s %4s %9s  %-20s %-10s %s\n", "KEY", "SIZE", "RUNS", "DOCUMENTS", "CREATED", "TOKENIZER", "SOURCES")
	var total int64
	for _, e := range ents {
		total += e.Bytes
		created := e.Created.UTC().Format("2006-01-02 15:04:05")
		switch {
		case e.Temporary:
			fmt.Fprintf(stdout, "%-24s %10s %4s %9s  %-20s building, or left by a builder that died (%s)\n", e.Key, mib(e.Bytes), "-", "-", created, e.Dir)
		case e.Foreign != "":
			fmt.Fprintf(stdout, "%-24s %10s %4s %9s  %-20s not memo's, left alone: %s (%s)\n", e.Key, mib(e.Bytes), "-", "-", "-", e.Foreign, e.Dir)
		case e.Problem != "":
			fmt.Fprintf(stdout, "%-24s %10s %4d %9s  %-20s damaged: %s\n", e.Key, mib(e.Bytes), e.Runs, "-", created, e.Problem)
		default:
			fmt.Fprintf(stdout, "%-24s %10s %4d %9d  %-20s %-10s %s\n", e.Key, mib(e.Bytes), e.Runs, e.Documents, created, e.Tokenizer, strings.Join(e.Sources, ","))
			if e.DedupTokens != nil {
				fmt.Fprintf(stdout, "%24s %s\n", "", e.DedupTokens)
			}
		}
	}
	fmt.Fprintf(stdout, "total %s (RUNS counts hard links from run directories; copies are not counted)\n", mib(total))
	return nil
}

// printTokenizers ends data ls with the trained BPE tokenizers cached
// beside the datasets (gc --all removes them).
func printTokenizers(cache string) {
	var total int64
	toks := data.TrainedTokenizers(cache)
	for _, tok := range toks {
		total += tok.Bytes
	}
	fmt.Fprintf(stdout, "trained tokenizers: %d files, %s in %s\n", len(toks), mib(total), filepath.Join(cache, "tokenizers"))
}

func runDataGC(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageError("data gc: takes no arguments (got %q); the cache is --cache DIR", c.Args().Slice())
	}
	cache, err := existingCache(c, "data gc")
	if err != nil {
		return err
	}
	opt := data.GCOptions{Unused: c.Bool("unused"), All: c.Bool("all"), DryRun: c.Bool("dry-run")}
	removed, err := data.GCCache(cache, opt)
	if err != nil {
		return err
	}
	verb := "removed"
	if opt.DryRun {
		verb = "would remove"
	}
	var total int64
	for _, e := range removed {
		total += e.Bytes
		fmt.Fprintf(stdout, "%s %s (%s)\n", verb, e.Dir, mib(e.Bytes))
	}
	fmt.Fprintf(stdout, "%s %d entries, %s\n", verb, len(removed), mib(total))
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
