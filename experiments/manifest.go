package experiments

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/provenance"
	"github.com/memo-research/memo/internal/rankenv"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
)

// Stage status values in manifest.json.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// StageRecord is one stage's entry in manifest.json.
type StageRecord struct {
	Name     string    `json:"name"`
	Status   string    `json:"status"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Seconds  float64   `json:"seconds,omitempty"`
	Error    string    `json:"error,omitempty"`
	// ReusedFrom is the run directory whose outputs this stage linked
	// instead of running (data and train of an attack-only sweep point).
	ReusedFrom string `json:"reused_from,omitempty"`
	// ReusedOutputs digests the outputs the source's own record of the
	// stage listed when this run linked them (reusedDigest): a source
	// trained again since (--force, a redone stage) leads the links to
	// another model than the one this run attacked. Absent in older
	// manifests.
	ReusedOutputs string `json:"reused_outputs,omitempty"`
	// Memo is the revision of the memo that last ran the stage
	// ("+modified" for a build from a modified tree): a run resumed or
	// extended by another binary than the one that created it (Versions)
	// says which stages that binary ran. Absent in older manifests.
	Memo string `json:"memo,omitempty"`
	// Outputs are the files the stage wrote (relative to the run
	// directory), checked when `memo run` finds the stage done: a missing
	// or changed one runs the stage again. Manifests of older memo
	// versions have none and are taken as they are.
	Outputs map[string]Output `json:"outputs,omitempty"`
}

// ManifestFile is a run directory's manifest, beside runfiles.ConfigFile.
const ManifestFile = "manifest.json"

// Manifest is manifest.json: what ran, on what, from which code and config.
type Manifest struct {
	Name       string    `json:"name"`
	ConfigHash string    `json:"config_hash"` // sha256 of config.toml
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
	Versions   Versions  `json:"versions"`
	Machine    Machine   `json:"machine"`
	// Environment holds the environment variables that change the last
	// bits of results (ResultEnvironment), as set for the process that last
	// ran a stage; absent when none is set.
	Environment map[string]string `json:"environment,omitempty"`
	// Launch is how the latest `memo run` on the directory was started:
	// launcher, world size, libtorch threads per process and whence,
	// Slurm's job, array and step ids.
	Launch *rankenv.Job  `json:"launch,omitempty"`
	Stages []StageRecord `json:"stages"`

	// DP is what the trained model's DP-SGD spent (ε at δ, σ, q, C,
	// steps), from its final checkpoint; absent without DP-SGD.
	DP *provenance.DPRecord `json:"dp,omitempty"`
}

// Versions records the software a run used.
type Versions struct {
	Go          string `json:"go"`
	Memo        string `json:"memo"` // VCS revision of the binary, or of the working tree
	MemoDirty   bool   `json:"memo_modified,omitempty"`
	MemoVersion string `json:"memo_version,omitempty"`
	Libtorch    string `json:"libtorch"`
}

// Machine records where a run ran.
type Machine struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Cores    int    `json:"cores"`
	RAMBytes uint64 `json:"ram_bytes"`
	CPUModel string `json:"cpu_model"`
	// CPUFeatures are the instruction-set extensions of /proc/cpuinfo that
	// decide which kernels run (and so the last bits of results): the
	// AVX2/FMA, AVX-512 and AMX families (Arm: asimd, sve, bf16).
	CPUFeatures []string `json:"cpu_features,omitempty"`
	// Kernels are libtorch's choices on this CPU: ATen's dispatch level,
	// the BLAS and OpenBLAS's kernel.
	Kernels torchx.Kernels `json:"kernels"`
	// GPUs is the number of CUDA devices libtorch sees.
	GPUs int `json:"gpus"`
	// GPUModels are the GPUs' CUDA names, datasheet SKUs and dense bf16
	// peaks; DatasheetPeak says in one line the peak MFU is against (GPU
	// 0's), or why there is none.
	GPUModels     []GPUModel `json:"gpu_models,omitempty"`
	DatasheetPeak string     `json:"datasheet_peak"`
	// Devices are where the stages ran (train.device, extract.device).
	Devices map[string]string `json:"devices,omitempty"`
}

// numericFeature marks the /proc/cpuinfo flags worth recording.
func numericFeature(f string) bool {
	switch f {
	case "avx", "avx2", "fma", "f16c", "asimd", "sve", "sve2", "bf16", "i8mm":
		return true
	}
	return strings.HasPrefix(f, "avx512") || strings.HasPrefix(f, "amx")
}

// Stage returns the record of a stage, adding it as pending when new.
func (m *Manifest) Stage(name string) *StageRecord {
	for i := range m.Stages {
		if m.Stages[i].Name == name {
			return &m.Stages[i]
		}
	}
	m.Stages = append(m.Stages, StageRecord{Name: name, Status: StatusPending})
	return &m.Stages[len(m.Stages)-1]
}

// Done reports whether every listed stage finished.
func (m *Manifest) Done(stages []string) bool {
	for _, s := range stages {
		if m.Stage(s).Status != StatusDone {
			return false
		}
	}
	return true
}

// UnfinishedTraining says how a run directory's training stands when it
// has not finished ("failed: interrupted at step 17 of 20: context
// canceled"), or "" when it has, or when dir has no readable manifest (a
// bare checkpoint directory): the run's own outputs after training are
// the finished model's.
func UnfinishedTraining(dir string) string {
	m, err := ReadManifest(dir)
	if err != nil {
		return ""
	}
	rec := m.Stage("train")
	if rec.Status == StatusDone {
		return ""
	}
	if rec.Error != "" {
		return rec.Status + ": " + rec.Error
	}
	return rec.Status
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

func (m *Manifest) write(dir string) error {
	m.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

func newManifest(name, hash string) *Manifest {
	now := time.Now().UTC()
	return &Manifest{Name: name, ConfigHash: hash, Created: now, Updated: now, Versions: CurrentVersions(), Machine: currentMachine(), Environment: resultEnvironment()}
}

// ResultEnvironment are the environment variables that switch a
// computation to another implementation of the same arithmetic, and so
// can move the last bits of results: MEMO_KERNELS=off (internal/torchx's
// decode kernels), MEMO_FUSED_OPTIM=off (train's fused AdamW on a GPU),
// MEMO_KEEP_QKV=off (precision's bf16 q, k, v on a GPU), MEMO_FUSED_NORM=off
// (torchx's fused RMSNorm on a GPU), MEMO_GQA=off (precision's unrepeated
// grouped-query heads on a GPU), MEMO_CUDA_GRAPHS=on (engine's greedy
// token steps replayed as CUDA graphs; the same kernels, recorded in case
// a capture on a stream of its own picks others), MEMO_FUSED_ADD=off
// (torchx's residual sums added apart from their norms on a GPU).
var ResultEnvironment = []string{"MEMO_KERNELS", "MEMO_FUSED_OPTIM", "MEMO_KEEP_QKV", "MEMO_FUSED_NORM", "MEMO_GQA", "MEMO_CUDA_GRAPHS", "MEMO_FUSED_ADD"}

// resultEnvironment is the set ones of ResultEnvironment; nil when none is.
func resultEnvironment() map[string]string {
	var env map[string]string
	for _, k := range ResultEnvironment {
		if v, ok := os.LookupEnv(k); ok {
			if env == nil {
				env = map[string]string{}
			}
			env[k] = v
		}
	}
	return env
}

// CurrentVersions are the versions of this binary, its Go and its libtorch,
// as manifest.json records them.
func CurrentVersions() Versions {
	v := BuiltVersions()
	if v.Memo == "" {
		// `go run` and `go test` builds carry no VCS stamp: ask git.
		if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
			v.Memo = strings.TrimSpace(string(out))
			if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
				v.MemoDirty = len(strings.TrimSpace(string(st))) > 0
			}
		} else {
			v.Memo = "unknown"
		}
	}
	return v
}

// stageRevision is the revision StageRecord.Memo records: this
// process's, asked once.
var stageRevision = sync.OnceValue(func() string {
	v := CurrentVersions()
	if v.MemoDirty {
		return v.Memo + "+modified"
	}
	return v.Memo
})

// builtRevision is the revision `make build` stamps (-ldflags -X),
// "REV" or "REV+modified": a workspace build carries no VCS stamp.
var builtRevision string

// BuiltVersions is CurrentVersions from what the binary records alone (its
// VCS stamp, else make build's): Memo is empty in a build with neither.
func BuiltVersions() Versions {
	v := BuiltRevision()
	v.Go, v.Libtorch = runtime.Version(), libtorchVersion()
	return v
}

// BuiltRevision is BuiltVersions' memo fields alone (Memo, MemoDirty,
// MemoVersion), which cost nothing to read.
func BuiltRevision() Versions {
	var v Versions
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.MemoVersion = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Memo = s.Value
			case "vcs.modified":
				v.MemoDirty = s.Value == "true"
			}
		}
	}
	if v.Memo == "" && builtRevision != "" {
		v.Memo, v.MemoDirty = strings.CutSuffix(builtRevision, "+modified")
	}
	return v
}

// libtorchVersion reads the version of the libtorch that memo links: the
// build-version file of an unpacked LIBTORCH distribution, else the soname
// suffix of the system library.
func libtorchVersion() string {
	if dir := os.Getenv("LIBTORCH"); dir != "" {
		if b, err := os.ReadFile(filepath.Join(dir, "build-version")); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	matches, _ := filepath.Glob("/usr/lib/*/libtorch_cpu.so.*")
	sort.Strings(matches)
	for i := len(matches) - 1; i >= 0; i-- {
		if _, ver, ok := strings.Cut(filepath.Base(matches[i]), ".so."); ok {
			return ver + " (system)"
		}
	}
	return "unknown"
}

func currentMachine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU()}
	m.Hostname, _ = os.Hostname()
	m.CPUModel, m.CPUFeatures = cpuInfo()
	m.Kernels = torchx.CPUKernels()
	if gotch.CUDA.IsAvailable() {
		m.GPUs = int(gotch.CUDA.DeviceCount())
	}
	m.GPUModels, m.DatasheetPeak = gpuModels(m.GPUs)
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb uint64
			if n, _ := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); n == 1 {
				m.RAMBytes = kb * 1024
				break
			}
		}
		f.Close()
	}
	return m
}

// cpuInfo is the CPU's model name and its numeric features (numericFeature),
// sorted, from /proc/cpuinfo; empty where it cannot be read.
func cpuInfo() (model string, features []string) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "", nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			model = strings.TrimSpace(v)
		case "flags", "Features":
			for _, f := range strings.Fields(v) {
				if numericFeature(f) {
					features = append(features, f)
				}
			}
		}
		if model != "" && features != nil {
			break // the first processor's lines describe them all
		}
	}
	sort.Strings(features)
	return model, features
}

// CurrentMachine is the machine record manifest.json would get here (memo
// devices prints it).
func CurrentMachine() Machine { return currentMachine() }
