package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/extract"
	"github.com/urfave/cli/v2"
)

// scanWith is `memo extract --scan`: the attack's documents scanned
// (extract.Scan) into out, or, without --out, into the scan beside where
// the attack's completions would go (extract.ScanPath).
func scanWith(c *cli.Context, ctx context.Context, cfg extract.Config, ckpt string, ds *data.Dataset, out string) error {
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
	return nil
}
