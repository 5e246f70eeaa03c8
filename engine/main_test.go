package engine

import (
	"os"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/nn"
	"github.com/sugarme/gotch/ts"
)

func TestMain(m *testing.M) {
	torchx.Init(1, 1)
	os.Exit(m.Run())
}

func newTest(t *testing.T, cfg model.Config) *model.GPT {
	t.Helper()
	vs := nn.NewVarStore(gotch.CPU)
	g, err := model.New(vs.Root(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
func ids(t *testing.T, rows [][]int64) *ts.Tensor {
	t.Helper()
	flat := []int64{}
	for _, r := range rows {
		flat = append(flat, r...)
	}
	x, err := model.TensorOf(flat, []int64{int64(len(rows)), int64(len(rows[0]))}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
func maxAbsDiff(a, b *ts.Tensor) float64 {
	d := a.MustSub(b, false).MustAbs(true).MustMax(true)
	return d.Float64Values()[0]
}

// testDevices are the devices a test checks the same work on: the CPU,
// and the first GPU where there is one (scripts/gpu/issue41-next.sh runs
// the engine's tests there).
func testDevices() []gotch.Device {
	devs := []gotch.Device{gotch.CPU}
	if gotch.CUDA.IsAvailable() {
		devs = append(devs, gotch.CudaBuilder(0))
	}
	return devs
}
