//go:build !cuda

package torchx

import (
	"errors"

	"github.com/sugarme/gotch"
)

// Graph is a captured CUDA graph; a build without the cuda tag has none.
type Graph struct{}

// GraphsAvailable is false: this build captures no CUDA graph.
func GraphsAvailable() bool { return false }

var errNoGraphs = errors.New("CUDA graphs need memo built with -tags cuda")

// OnSideStream fails: a build without the cuda tag has no CUDA stream.
func OnSideStream(dev gotch.Device, run func()) error { return errNoGraphs }

// CaptureGraph fails: a build without the cuda tag captures no graph.
func CaptureGraph(dev gotch.Device, run func()) (*Graph, error) { return nil, errNoGraphs }

// Replay fails: there is nothing to replay.
func (g *Graph) Replay() error { return errNoGraphs }

// Free does nothing.
func (g *Graph) Free() {}
