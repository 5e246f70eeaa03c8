package experiments

import (
	"fmt"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/provenance"
)

// trainedDP is the DP-SGD record of the run's newest good checkpoint (nil:
// trained without DP-SGD), for manifest.json.
func trainedDP(runDir string) (*provenance.DPRecord, error) {
	dir, st, err := checkpoint.LatestGood(runDir)
	if err != nil || dir == "" {
		return nil, err
	}
	r, err := provenance.ParseDP(st.DP)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return r, nil
}
