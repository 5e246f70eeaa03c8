package extract

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/engine/approx"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/model"
)

// lokiBasis returns Loki's key basis for the model of ckpt, calibrated on
// the first extract.loki.calibration_docs training (target) documents'
// attack windows. It is cached beside the weights as
// loki-basis-<digest>.json, the digest covering the windows' tokens, so a
// different calibration set or window gets its own file.
func lokiBasis(g *model.GPT, ckpt string, ds *data.Dataset, cfg Config, window int) (*approx.LokiBasis, error) {
	docs, err := ds.Docs("target")
	if err != nil {
		return nil, fmt.Errorf("loki calibration: %w", err)
	}
	if len(docs) > cfg.Loki.CalibrationDocs {
		docs = docs[:cfg.Loki.CalibrationDocs]
	}
	var windows [][]int32
	h := sha256.New()
	for _, d := range docs {
		w := d.IDs[:min(len(d.IDs), window)]
		if len(w) == 0 {
			continue
		}
		windows = append(windows, w)
		binary.Write(h, binary.LittleEndian, int64(len(w))) // a hash.Hash does not fail
		binary.Write(h, binary.LittleEndian, w)
	}
	if len(windows) == 0 {
		return nil, fmt.Errorf("loki calibration: %s has no target documents to calibrate on", ds.Dir())
	}
	path := filepath.Join(ckpt, fmt.Sprintf("loki-basis-%x.json", h.Sum(nil)[:6]))
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		var b approx.LokiBasis
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("loki basis %s is corrupt (delete it to recalibrate): %w", path, err)
		}
		return &b, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("loki basis: %w", err)
	}
	slog.Info("extract: calibrating the loki key basis", "documents", len(windows), "out", path)
	b, err := approx.CalibrateLoki(g, windows)
	if err != nil {
		return nil, fmt.Errorf("loki calibration: %w", err)
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("loki basis: %w", err)
	}
	if err := atomicfile.WriteFile(path, out); err != nil {
		return nil, fmt.Errorf("loki basis: %w", err)
	}
	return b, nil
}
