package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/extract"
	"github.com/urfave/cli/v2"
)

// scanWith is `memo extract --scan`: the attack's documents scanned
// (extract.Scan) into out, or, without --out, into the scan beside where
// the attack's completions would go (extract.ScanPath).
func scanWith(c *cli.Context, ctx context.Context, cfg extract.Config, ckpt string, ds *data.Dataset, out string) error {
	var compare func(scan string) (extract.ScanAgreement, error)
	if f := c.String("scan-compare"); f != "" {
		// Read before the scan: a wrong file is refused before any work.
		comps, err := eval.ReadCompletions(f)
		if err != nil {
			return usageError("extract --scan-compare %s: %v", f, oneLine(err.Error()))
		}
		compare = func(scan string) (extract.ScanAgreement, error) { return extract.CompareScanFile(scan, comps) }
	}
	if !c.IsSet("out") {
		out = extract.ScanPath(out)
		if err := extract.CheckScanOut(out); err != nil {
			return err
		}
	}
	if err := extract.Scan(ctx, cfg, ckpt, ds, out); err != nil {
		if errors.Is(err, extract.ErrConfig) {
			return usageError("%v", err)
		}
		return err
	}
	fmt.Fprintf(c.App.Writer, "scan: %s\n", out)
	if compare == nil {
		return nil
	}
	a, err := compare(out)
	if err != nil {
		return usageError("extract --scan-compare %s: %v", c.String("scan-compare"), err)
	}
	fmt.Fprintf(c.App.Writer, "against %s: %s\n", c.String("scan-compare"), a)
	if len(a.Differ) > 0 {
		return cli.Exit(fmt.Sprintf("memo: extract --scan-compare: the scan and generation differ on %d of %d documents", len(a.Differ), a.Compared), 1)
	}
	return nil
}
