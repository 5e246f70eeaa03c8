package train

import "github.com/memo-research/memo/internal/runfiles"

// Metric is one optimizer step's row of metrics.arrow; the file's schema
// and its reader and writer live in internal/runfiles with the run
// directory's other files.
type Metric = runfiles.Metric
