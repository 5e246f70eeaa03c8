package extract

import (
	"os"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
)

func TestMain(m *testing.M) {
	torchx.Init(1, 1)
	os.Exit(m.Run())
}
