package experiments

import (
	"fmt"
	"github.com/memo-research/memo/internal/filehash"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/runlock"
)

// Output is one file a stage wrote, as manifest.json records it, so that
// `memo run` on a finished run can tell a deleted or edited output from a
// complete run and regenerate it.
type Output struct {
	Size int64 `json:"size"`
	// SHA256 is the file's digest, for files up to hashLimit bytes; larger
	// ones (checkpoints, datasets) carry digests of their own, which their
	// readers verify, and are checked here by size. A symlink (a reused
	// stage) records "link:" and its target instead.
	SHA256 string `json:"sha256,omitempty"`
	// modTime tells a file changed between two snapshots without reading it.
	modTime time.Time
}

// hashLimit is the largest output whose sha256 the manifest records.
const hashLimit = 64 << 20

// runFiles is every file under dir but the ones no stage writes (the
// spec, the manifest, the lock) and hidden temporaries, by path relative
// to dir (slash-separated), with size and modification time.
func runFiles(dir string) (map[string]Output, error) {
	files := map[string]Output{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && rel != "." {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		switch rel {
		case runfiles.ConfigFile, ManifestFile, runlock.FileName:
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			files[filepath.ToSlash(rel)] = Output{SHA256: "link:" + target}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = Output{Size: info.Size(), modTime: info.ModTime()}
		return nil
	})
	return files, err
}

// stageOutputs is what a stage wrote: the files of after that are not in
// before or changed since, with their digests.
func stageOutputs(dir string, before, after map[string]Output) (map[string]Output, error) {
	outs := map[string]Output{}
	for rel, a := range after {
		if b, ok := before[rel]; ok && b.Size == a.Size && b.modTime.Equal(a.modTime) && b.SHA256 == a.SHA256 {
			continue
		}
		if a.SHA256 == "" && a.Size <= hashLimit {
			sum, err := filehash.SHA256(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				return nil, err
			}
			a.SHA256 = sum
		}
		outs[rel] = a
	}
	return outs, nil
}

// staleTemp reports whether name is what memo's writers leave when their
// process dies mid-write: atomicfile's temporary files and directories
// (".NAME.tmp-DIGITS") or a dataset file being linked in (".NAME.link-PID").
func staleTemp(name string) bool { return atomicfile.IsTempName(name) || data.IsLinkTemp(name) }

// removeStaleTemps removes from the run directory dir what writers killed
// mid-write left behind (staleTemp), and returns their paths. Only the
// process that holds the run directory may call it, before any stage
// runs: no write of this run is under way then. Checkpoints' own
// temporaries are checkpoint.RemoveStaleTemps's.
func removeStaleTemps(dir string) ([]string, error) {
	var stale []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// The lock's own heartbeat writes beside it as this runs.
		if p != dir && staleTemp(d.Name()) && !strings.HasPrefix(d.Name(), "."+runlock.FileName) {
			stale = append(stale, p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range stale {
		if err := os.RemoveAll(p); err != nil {
			return nil, err
		}
	}
	return stale, nil
}

// recordedOnly is the files of snapshot that some stage of m recorded as
// its output.
func recordedOnly(snapshot map[string]Output, m *Manifest) map[string]Output {
	kept := map[string]Output{}
	for _, rec := range m.Stages {
		for rel := range rec.Outputs {
			if o, ok := snapshot[rel]; ok {
				kept[rel] = o
			}
		}
	}
	return kept
}

// brokenOutput names the first recorded output of a stage that is missing
// or no longer what the stage wrote ("" when all are intact).
func brokenOutput(dir string, outs map[string]Output) string {
	names := make([]string, 0, len(outs))
	for rel := range outs {
		names = append(names, rel)
	}
	sort.Strings(names)
	for _, rel := range names {
		want := outs[rel]
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if target, ok := strings.CutPrefix(want.SHA256, "link:"); ok {
			if got, err := os.Readlink(p); err != nil || got != target {
				return rel + " (a link to " + target + ") is missing or changed"
			}
			continue
		}
		info, err := os.Stat(p)
		switch {
		case err != nil:
			return rel + " is missing"
		case info.Size() != want.Size:
			return fmt.Sprintf("%s has %d bytes, the stage wrote %d", rel, info.Size(), want.Size)
		case want.SHA256 != "":
			if got, err := filehash.SHA256(p); err != nil || got != want.SHA256 {
				return rel + " changed since the stage wrote it"
			}
		}
	}
	return ""
}

// sameOutputs reports whether a stage run again wrote what it wrote before
// (then the stages after it need not run again).
func sameOutputs(a, b map[string]Output) bool {
	if len(a) != len(b) {
		return false
	}
	for rel, x := range a {
		y, ok := b[rel]
		if !ok || x.Size != y.Size || x.SHA256 != y.SHA256 {
			return false
		}
	}
	return true
}
