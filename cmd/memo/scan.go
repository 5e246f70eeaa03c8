package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/urfave/cli/v2"
)

// scanWith is `memo extract --scan`: the attack's documents scanned
// (extract.Scan) into out, or, without --out, into the scan beside where
// the attack's completions would go (extract.ScanPath).
func scanWith(c *cli.Context, ctx context.Context, cfg extract.Config, ckpt string, ds *data.Dataset, out string) error {
	var compare func(scan string) (extract.ScanAgreement, error)
	if f := c.String("scan-compare"); f != "" {
		// Read before the scan: a wrong file is refused before any work.
		comps, meta, err := runfiles.ReadCompletions(f)
		if err != nil {
			return usageError("extract --scan-compare %s: %v", f, oneLine(err.Error()))
		}
		if why := notScannedAttack(meta, ckpt); why != "" {
			// Exit 1 says the scan and generation disagree: another
			// attack's completions must not read as that.
			return usageError("extract --scan-compare %s: %s; compare a scan with an exact greedy attack of the same model", f, why)
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

// notScannedAttack says why completions with schema metadata meta are not
// of the attack a scan of ckpt reproduces: another model (by the digest of
// its weights: a run directory moved or copied keeps its model), a sampled
// or beam attack, or an approximate one (QuantSpec alone is exact). "" when
// they are, or when neither records what would tell.
func notScannedAttack(meta map[string]string, ckpt string) string {
	if want, have := meta[provenance.ModelSHA256], modelDigest(ckpt); want != "" && have != "" && want != have {
		return fmt.Sprintf("they are of another model (the checkpoint %s, weights sha256 %.12s; the scan's %s, %.12s)", meta[provenance.Checkpoint], want, ckpt, have)
	}
	if raw := meta[provenance.Extract]; raw != "" {
		var e extract.Config
		if err := json.Unmarshal([]byte(raw), &e); err == nil && (e.Decoding != "" && e.Decoding != extract.DecodeGreedy || e.Samples > 1) {
			return fmt.Sprintf("they are of a %s attack (%d samples), the scan greedy decoding's", e.Decoding, max(e.Samples, 1))
		}
	}
	if a := meta[provenance.Approx]; a != "" {
		for _, part := range strings.Split(a, "+") {
			if !strings.HasPrefix(part, "quantspec-") {
				return fmt.Sprintf("they are of the approximate attack %s, the scan exact", a)
			}
		}
	}
	return ""
}

// modelDigest is the sha256 of ckpt's model.safetensors as its state.json
// records it; "" where it records none (a Hugging Face directory, a LoRA
// checkpoint).
func modelDigest(ckpt string) string {
	st, err := checkpoint.ReadState(ckpt)
	if err != nil {
		return ""
	}
	return st.SHA256[checkpoint.ModelFile]
}
