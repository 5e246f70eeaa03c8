package experiments

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := newManifest("x", "abc")
	m.Stage("data").Status = StatusDone
	m.Stage("train")
	if err := m.write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.ConfigHash != "abc" || back.Stage("data").Status != StatusDone || back.Stage("train").Status != StatusPending {
		t.Errorf("manifest round trip = %+v", back)
	}
	if back.Done([]string{"data"}) != true || back.Done([]string{"data", "train"}) {
		t.Error("Done disagrees with the stage statuses")
	}
	if back.Machine.Cores < 1 || back.Versions.Go == "" {
		t.Errorf("machine/versions not recorded: %+v %+v", back.Machine, back.Versions)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	if _, err := ReadManifest(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Errorf("missing manifest: err = %v", err)
	}
}

// TestMachineRecordsKernels: the manifest names what decides the last bits
// of results on this machine: CPU features, ATen's dispatch and the BLAS.
func TestMachineRecordsKernels(t *testing.T) {
	m := currentMachine()
	if m.Kernels.CPUCapability == "" || m.Kernels.BLAS == "" {
		t.Errorf("kernels %+v: want libtorch's CPU capability and BLAS", m.Kernels)
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && !slices.Contains(m.CPUFeatures, "avx2") && !slices.Contains(m.CPUFeatures, "avx") {
		t.Errorf("cpu_features %v on linux/amd64: want the AVX family read from /proc/cpuinfo", m.CPUFeatures)
	}
	for _, f := range m.CPUFeatures {
		if !numericFeature(f) {
			t.Errorf("cpu_features records %q", f)
		}
	}
	if got := deviceName(""); got != "cpu" {
		t.Errorf("deviceName(\"\") = %q", got)
	}
	if got := deviceName("CUDA"); got != "cuda:0" {
		t.Errorf("deviceName(\"CUDA\") = %q", got)
	}
}

// TestManifestRecordsResultEnvironment: the variables that change results
// are in manifest.json when set, and absent when not.
func TestManifestRecordsResultEnvironment(t *testing.T) {
	for _, k := range ResultEnvironment {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	if env := newManifest("x", "h").Environment; env != nil {
		t.Fatalf("environment %v with none set", env)
	}
	t.Setenv("MEMO_KERNELS", "off")
	env := newManifest("x", "h").Environment
	if len(env) != 1 || env["MEMO_KERNELS"] != "off" {
		t.Fatalf("environment %v, want MEMO_KERNELS=off", env)
	}
}
