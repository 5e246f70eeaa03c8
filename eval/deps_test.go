package eval

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPureGoStagesLinkNoLibtorch: scoring, figures and the goldfish masks
// (eval, plots, and loss and data, which memo mask uses) build without
// libtorch, so they run where it is not installed and their tests need no
// C++ build. When loss held the masked cross-entropy on gotch tensors,
// eval linked gotch through loss.Config and this failed.
func TestPureGoStagesLinkNoLibtorch(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "./eval", "./plots", "./loss", "./data")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/sugarme/gotch") || d == "github.com/memo-research/memo/internal/torchx" {
			t.Errorf("eval, plots, loss or data depends on %s: these stages must build without libtorch", d)
		}
	}
}
