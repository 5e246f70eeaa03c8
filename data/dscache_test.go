package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memo-research/memo/internal/runlock"
)

func readCacheLink(t *testing.T, runDir string) CacheLink {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(runDir, "data", CacheLinkFile))
	if err != nil {
		t.Fatal(err)
	}
	var l CacheLink
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// cacheEntries lists the names under CacheDir/datasets other than the
// locks directory: entries and temporary directories.
func cacheEntries(t *testing.T, cache string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(cache, datasetsDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != locksDir {
			names = append(names, e.Name())
		}
	}
	return names
}

// sameFiles fails unless the dataset files of two runs are one file each
// (hard links to the cache entry).
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	for _, name := range datasetFiles {
		fa, err := os.Stat(filepath.Join(a, "data", name))
		if err != nil {
			t.Fatal(err)
		}
		fb, err := os.Stat(filepath.Join(b, "data", name))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(fa, fb) {
			t.Errorf("%s of %s and %s are two files, want one cached build", name, a, b)
		}
	}
}

// TestDatasetCacheReuse: a second run of one config reuses the first's
// build (the same files, reused = true in cache.json); another seed or
// another source file content is another key; a cached file edited in
// place through a run's hard link is never reused but rebuilt.
func TestDatasetCacheReuse(t *testing.T) {
	src := t.TempDir()
	n := 0
	for _, p := range strings.Split(opticksText(t), "\n\n") {
		if n < 40 && len(p) > 600 {
			writeFile(t, filepath.Join(src, fmt.Sprintf("p%02d.txt", n)), p)
			n++
		}
	}
	cfg := testConfig(t)
	cfg.Sources, cfg.Tokenizer = []string{"txt:" + src}, "bpe:300"
	cfg.Targets, cfg.Controls, cfg.Validation, cfg.MinTokens, cfg.DedupWords = 5, 5, 2, 20, 0
	run := func(c Config) string {
		dir := t.TempDir()
		if err := Build(context.Background(), c, dir); err != nil {
			t.Fatalf("Build: %v", err)
		}
		if _, err := Open(dir); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b := run(cfg), run(cfg)
	sameFiles(t, a, b)
	la, lb := readCacheLink(t, a), readCacheLink(t, b)
	if la.Reused || !lb.Reused || la.Key != lb.Key || la.Linked != "hardlink" {
		t.Errorf("cache.json: first %+v, second %+v; want the first built, the second reused, one key, hard links", la, lb)
	}
	if got := cacheEntries(t, cfg.CacheDir); len(got) != 1 || got[0] != la.Key {
		t.Errorf("cache holds %v, want only %s", got, la.Key)
	}

	// Keys: the cache location and switch are not part of it; the seed and
	// the content of a source file are.
	other := cfg
	other.CacheDir = t.TempDir()
	if _, k, _ := cacheKeyInput(other, other.CacheDir); k != la.Key {
		t.Errorf("key with another cache_dir %s, want %s", k, la.Key)
	}
	seeded := cfg
	seeded.Seed++
	if l := readCacheLink(t, run(seeded)); l.Key == la.Key || l.Reused {
		t.Errorf("another seed: %+v, want a new key built", l)
	}
	orig := filepath.Join(src, "p00.txt")
	was, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, orig, strings.Repeat("The first file now says something else entirely. ", 30))
	if l := readCacheLink(t, run(cfg)); l.Key == la.Key || l.Reused {
		t.Errorf("edited source file: %+v, want a new key built", l)
	}
	writeFile(t, orig, string(was))

	// The run's links are read-only; an in-place edit forced through one
	// (chmod, or as root) damages the entry: rebuilt.
	for _, name := range datasetFiles {
		fi, err := os.Stat(filepath.Join(b, "data", name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != cacheFileMode {
			t.Errorf("run's %s has mode %v, want read-only %v", name, fi.Mode().Perm(), fs.FileMode(cacheFileMode))
		}
	}
	if err := os.Chmod(filepath.Join(b, "data", "tokens.arrow"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(b, "data", "tokens.arrow"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("garbage")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	c := run(cfg)
	if l := readCacheLink(t, c); l.Key != la.Key || l.Reused {
		t.Errorf("after an in-place edit of the entry: %+v, want key %s rebuilt", l, la.Key)
	}
	fb, _ := os.Stat(filepath.Join(b, "data", "tokens.arrow"))
	fc, _ := os.Stat(filepath.Join(c, "data", "tokens.arrow"))
	if os.SameFile(fb, fc) {
		t.Error("the rebuilt run shares the edited tokens.arrow")
	}
	if got := len(cacheEntries(t, cfg.CacheDir)); got != 3 {
		t.Errorf("cache holds %d entries after three keys, want 3 (no temporary or damaged directory left)", got)
	}
}

// concurrentConfig is the config both processes of
// TestDatasetCacheTwoProcesses build.
func concurrentConfig(cache string) Config {
	cfg := DefaultConfig()
	cfg.Targets, cfg.Controls, cfg.Validation = 10, 10, 5
	cfg.Tokenizer, cfg.CacheDir = "bpe:300", cache
	return cfg
}

// TestDatasetCacheHelperProcess is one builder of
// TestDatasetCacheTwoProcesses (it does nothing in a normal test run). The
// builder that takes the lock pauses so that the other arrives while it
// builds.
func TestDatasetCacheHelperProcess(t *testing.T) {
	cache, runDir := os.Getenv("MEMO_TEST_DSCACHE"), os.Getenv("MEMO_TEST_DSCACHE_RUN")
	if cache == "" {
		t.Skip("helper process of TestDatasetCacheTwoProcesses")
	}
	buildHook = func() { time.Sleep(time.Second) }
	if err := Build(context.Background(), concurrentConfig(cache), runDir); err != nil {
		t.Fatal(err)
	}
}

// TestDatasetCacheTwoProcesses: two processes building one key at once
// leave one valid cache entry, built once; both runs link it.
func TestDatasetCacheTwoProcesses(t *testing.T) {
	cache := t.TempDir()
	runs := []string{t.TempDir(), t.TempDir()}
	var cmds []*exec.Cmd
	for _, r := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDatasetCacheHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MEMO_TEST_DSCACHE="+cache, "MEMO_TEST_DSCACHE_RUN="+r)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("helper %s:\n%s", r, out.String())
			}
		})
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}
	built := 0
	for _, r := range runs {
		if _, err := Open(r); err != nil {
			t.Fatal(err)
		}
		if !readCacheLink(t, r).Reused {
			built++
		}
	}
	if built != 1 {
		t.Errorf("%d of the two processes built the dataset, want 1", built)
	}
	sameFiles(t, runs[0], runs[1])
	if got := cacheEntries(t, cache); len(got) != 1 {
		t.Errorf("cache holds %v, want one entry (no temporary directory)", got)
	}
	if err := checkEntry(filepath.Join(cache, datasetsDir, readCacheLink(t, runs[0]).Key)); err != nil {
		t.Errorf("entry: %v", err)
	}
}

// TestDatasetCacheDeadBuilder: a lock left by a builder that died (its
// PID gone) and its half-written temporary directory do not block the next
// build, which takes the lock over and removes the leftovers.
func TestDatasetCacheDeadBuilder(t *testing.T) {
	cache := t.TempDir()
	cfg := concurrentConfig(cache)
	_, key, err := cacheKeyInput(cfg, cache)
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	host, _ := os.Hostname()
	lockDir := filepath.Join(cache, datasetsDir, locksDir, key)
	writeFile(t, filepath.Join(lockDir, "memo.lock"), fmt.Sprintf(`{"pid":%d,"host":%q,"started":"2026-01-02T03:04:05Z"}`, dead.Process.Pid, host))
	writeFile(t, filepath.Join(cache, datasetsDir, tmpPrefix+key+"-123", "docs.arrow"), "half written")
	run := t.TempDir()
	done := make(chan error, 1)
	go func() { done <- Build(context.Background(), cfg, run) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Build still waits for a dead builder's lock after 60 s")
	}
	if l := readCacheLink(t, run); l.Reused || l.Key != key {
		t.Errorf("cache.json %+v, want key %s built", l, key)
	}
	if got := cacheEntries(t, cache); len(got) != 1 || got[0] != key {
		t.Errorf("cache holds %v, want only %s", got, key)
	}
	if _, err := os.Stat(filepath.Join(lockDir, "memo.lock")); !os.IsNotExist(err) {
		t.Errorf("lock left behind: %v", err)
	}
}

// TestDatasetCacheGC: gc removes dead builders' temporary directories and
// dead writes' files in kept entries always, entries no run links to with
// Unused, everything with All, and a run keeps its dataset when its entry
// is removed.
func TestDatasetCacheGC(t *testing.T) {
	cache := t.TempDir()
	cfg := concurrentConfig(cache)
	kept, gone := t.TempDir(), t.TempDir()
	if err := Build(context.Background(), cfg, kept); err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Seed++
	if err := Build(context.Background(), other, gone); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cache, datasetsDir, tmpPrefix+"0123-456", "docs.arrow"), "a dead builder's")
	// with its spool, which it removes when it lives to (a probe's kill -9)
	writeFile(t, filepath.Join(cache, datasetsDir, tmpPrefix+"0123-456", spoolPrefix+"3998980171"), "ids")
	// An index beside an entry's files (memo index build) is the entry's own.
	writeFile(t, filepath.Join(cache, datasetsDir, readCacheLink(t, kept).Key, IndexFile), "an index")
	ents, err := ListCache(cache)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, e := range ents {
		runs[e.Key] = e.Runs
		if !e.Temporary && (e.Problem != "" || e.Documents < 25 || e.Tokenizer != "bpe:300") {
			t.Errorf("entry %+v", e)
		}
	}
	keep, drop := readCacheLink(t, kept).Key, ""
	for k := range runs {
		if k != keep && k != "0123" {
			drop = k
		}
	}
	if len(ents) != 3 || runs[keep] != 1 || runs[drop] != 0 || runs["0123"] != 0 {
		t.Fatalf("ls: %+v, want the kept run's entry (1 run), the removed run's (0) and a temporary one", ents)
	}

	// A killed index build's temporary file in the kept entry goes; while
	// an index build holds the entry's lock, its file stays.
	keptDir := filepath.Join(cache, datasetsDir, keep)
	dead := filepath.Join(keptDir, "."+IndexFile+".tmp-123456")
	writeFile(t, dead, "half an index")
	release, err := LockEntry(context.Background(), keptDir)
	if err != nil {
		t.Fatal(err)
	}
	first, err := GCCache(cache, GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || first[0].Dir != filepath.Join(cache, datasetsDir, tmpPrefix+"0123-456") {
		t.Errorf("gc removed %+v, want only the dead builder's temporary directory", first)
	}
	if _, err := os.Stat(dead); err != nil {
		t.Errorf("gc removed %s while the entry's lock was held: %v", dead, err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}

	removed, err := GCCache(cache, GCOptions{Unused: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range removed {
		got = append(got, e.Dir)
	}
	if len(got) != 2 || !slices.Contains(got, dead) || !slices.Contains(got, filepath.Join(cache, datasetsDir, drop)) {
		t.Errorf("gc --unused removed %v, want %s and %s", got, drop, dead)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dead, err)
	}
	if _, err := os.Stat(filepath.Join(keptDir, IndexFile)); err != nil {
		t.Errorf("the kept entry lost its index: %v", err)
	}
	if names := cacheEntries(t, cache); len(names) != 1 || names[0] != keep {
		t.Errorf("after gc --unused: %v, want only %s", names, keep)
	}
	if _, err := GCCache(cache, GCOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if names := cacheEntries(t, cache); len(names) != 0 {
		t.Errorf("after gc --all: %v, want none", names)
	}
	if _, err := Open(kept); err != nil {
		t.Errorf("the run lost its dataset with the cache entry: %v", err)
	}
}

// cacheKeyOf is the dataset cache's key for cfg as it is now.
func cacheKeyOf(t *testing.T, cfg Config) string {
	t.Helper()
	_, k, err := cacheKeyInput(cfg, cfg.CacheDir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestCacheKeyJSONLDir: the key of a jsonl:DIR source follows the content
// of each JSONL file in it, and ignores other files.
func TestCacheKeyJSONLDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.jsonl"), `{"text": "one"}`+"\n")
	cfg := testConfig(t)
	cfg.Sources = []string{"jsonl:" + dir}
	k0 := cacheKeyOf(t, cfg)
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a JSONL file")
	if k := cacheKeyOf(t, cfg); k != k0 {
		t.Errorf("a non-JSONL file changed the key")
	}
	writeFile(t, filepath.Join(dir, "sub", "b.jsonl.gz"), "x")
	k1 := cacheKeyOf(t, cfg)
	writeFile(t, filepath.Join(dir, "a.jsonl"), `{"text": "two"}`+"\n")
	if k2 := cacheKeyOf(t, cfg); k1 == k0 || k2 == k1 {
		t.Errorf("keys %s, %s, %s: want a new key for an added file and for an edited one", k0, k1, k2)
	}
}

// TestCacheKeyTxtSymlink: a txt: directory's loader reads a .txt file
// that is a link, so the key hashes what the link leads to: editing the
// linked file makes a new key (it left links out, and a cached dataset of
// the file's old text was reused).
func TestCacheKeyTxtSymlink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "one")
	target := filepath.Join(elsewhere, "b.txt")
	writeFile(t, target, "two")
	if err := os.Symlink(target, filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.Sources = []string{"txt:" + dir}
	k0 := cacheKeyOf(t, cfg)
	writeFile(t, target, "three")
	if k := cacheKeyOf(t, cfg); k == k0 {
		t.Error("editing the file a .txt link leads to left the key as it was")
	}
}

// TestDatasetCacheUnwritable: a cache where no entry can be made (here a
// file where CACHE/datasets should be, which stops root too) does not stop
// a build: the dataset is built in the run directory, without cache.json.
func TestDatasetCacheUnwritable(t *testing.T) {
	cache := t.TempDir()
	writeFile(t, filepath.Join(cache, datasetsDir), "not a directory")
	cfg := concurrentConfig(cache)
	run := t.TempDir()
	if err := Build(context.Background(), cfg, run); err != nil {
		t.Fatalf("Build with an unwritable cache: %v", err)
	}
	if _, err := Open(run); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(run, "data", CacheLinkFile)); !os.IsNotExist(err) {
		t.Errorf("cache.json written for a dataset built in place: %v", err)
	}
}

// TestDatasetCacheUnlockable: a cache whose directories exist but whose
// lock this user cannot take (another user's, a group cache made under a
// private umask, a read-only mount: an environment probe saw exit 1,
// "permission denied") builds in the run directory as an unwritable one.
func TestDatasetCacheUnlockable(t *testing.T) {
	saved := lockCacheEntry
	t.Cleanup(func() { lockCacheEntry = saved })
	for _, cause := range []error{fs.ErrPermission, syscall.EROFS} {
		lockCacheEntry = func(_ context.Context, dir string) (*runlock.Lock, error) {
			return nil, fmt.Errorf("dataset cache: lock %s: %w", dir, &fs.PathError{Op: "open", Path: filepath.Join(dir, "memo.lock.tmp-1"), Err: cause})
		}
		run := t.TempDir()
		if err := Build(context.Background(), concurrentConfig(t.TempDir()), run); err != nil {
			t.Fatalf("Build with a lock it cannot take (%v): %v", cause, err)
		}
		if _, err := Open(run); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(run, "data", CacheLinkFile)); !os.IsNotExist(err) {
			t.Errorf("cache.json written for a dataset built in place: %v", err)
		}
	}
	// Any other failure to lock is still the build's.
	lockCacheEntry = func(context.Context, string) (*runlock.Lock, error) {
		return nil, errors.New("dataset cache: disk on fire")
	}
	if err := Build(context.Background(), concurrentConfig(t.TempDir()), t.TempDir()); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Build with a failing lock: %v", err)
	}
}

// TestOpticksKeyMatchesGoroot: the embedded Opticks keys datasets exactly as
// the copy in Go's source tree did, so caches and manifests of earlier runs
// still match.
func TestOpticksKeyMatchesGoroot(t *testing.T) {
	const want = "d4a9ac22462b35e7821a4f2706c211093da678620a8f9997989ee7cf8d507bbd"
	if got := opticksKey("opticks"); got.SHA256 != want || got.Size != 567198 || got.Path != OpticksName {
		t.Errorf("embedded Opticks keyed as %+v, want sha256 %s, 567198 bytes, path %s", got, want, OpticksName)
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go command to find Go's source tree with: %v", err)
	}
	p := filepath.Join(strings.TrimSpace(string(goroot)), "src", "testdata", OpticksName)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no Go source tree to compare with: %v", err)
	}
	old := hashFile("opticks", filepath.Dir(p), p)
	old.file, old.modTime = "", time.Time{} // where it was read, which no key holds
	if got := opticksKey("opticks"); got != old {
		t.Errorf("embedded Opticks keyed as %+v, Go's copy as %+v", got, old)
	}
}

// Placing a cache file where a hard link to it already is leaves no
// temporary name behind (rename between two links of one file does
// nothing), and placing it anew links it.
func TestPlaceFileTwice(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "entry.arrow")
	if err := os.WriteFile(src, []byte("docs"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "run", "docs.arrow")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if how, err := placeFile(src, dst); err != nil || how != "hardlink" {
			t.Fatalf("placeFile #%d: %q, %v", i+1, how, err)
		}
	}
	ents, err := os.ReadDir(filepath.Dir(dst))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "docs.arrow" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("after placing twice the run's data holds %v, want only docs.arrow", names)
	}
}

// TestGCDeadCacheTemps: gc removes the temporaries a killed tokenizer
// write and a killed lock taking left in the cache once they are older
// than a live write could be (their inode's change time), and nothing
// else there.
func TestGCDeadCacheTemps(t *testing.T) {
	cache := t.TempDir()
	tok := filepath.Join(cache, tokenizersDir)
	lock := filepath.Join(cache, datasetsDir, locksDir, "0123456789abcdef01234567")
	files := []struct {
		path string
		dead bool // once older than lockStaleAfter
	}{
		{filepath.Join(tok, ".bpe300-0123456789abcdef0123.json.tmp-4242"), true},
		{filepath.Join(tok, "bpe300-0123456789abcdef0123.json"), false}, // the tokenizer
		{filepath.Join(tok, ".notes.txt.tmp-1"), false},                 // not memo's name
		{filepath.Join(lock, "memo.lock.tmp-918273"), true},
		{filepath.Join(lock, "memo.lock.stale-31337"), true},
		{filepath.Join(lock, "memo.lock"), false},
		{filepath.Join(lock, "memo.lock.tmp-x"), false},
	}
	var want []string
	for _, f := range files {
		writeFile(t, f.path, "x")
		// An old modification time, as a lock moved aside keeps: the
		// inode's change time, now, still says it is new.
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(f.path, old, old); err != nil {
			t.Fatal(err)
		}
		if f.dead {
			want = append(want, f.path)
		}
	}
	slices.Sort(want)
	gc := func(dry bool) []string {
		t.Helper()
		removed, err := GCCache(cache, GCOptions{DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range removed {
			got = append(got, e.Dir)
		}
		slices.Sort(got)
		return got
	}
	if got := gc(false); len(got) != 0 {
		t.Fatalf("gc removed %q, written a moment ago", got)
	}
	defer func(now func() time.Time) { gcNow = now }(gcNow)
	gcNow = func() time.Time { return time.Now().Add(2 * lockStaleAfter) }
	for _, dry := range []bool{true, false} {
		if got := gc(dry); !slices.Equal(got, want) {
			t.Errorf("dry run %v: gc listed %q, want %q", dry, got, want)
		}
	}
	for _, f := range files {
		_, err := os.Stat(f.path)
		if gone := os.IsNotExist(err); gone != f.dead {
			t.Errorf("%s: removed %v, want %v", f.path, gone, f.dead)
		}
	}
}

// TestResolveCacheDir: the cache directory is absolute whichever way it
// is given (cache.json records entries by it, and a relative one moved
// with the directory memo ran in), and without a home directory it is
// this user's own under the temporary directory, not one every user
// shares (an environment probe saw a second user fail on the first's).
func TestResolveCacheDir(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMO_CACHE", "rel/cache")
	if got, want := ResolveCacheDir(""), filepath.Join(wd, "rel", "cache"); got != want {
		t.Errorf("MEMO_CACHE=rel/cache: %s, want %s", got, want)
	}
	if got, want := ResolveCacheDir("mine"), filepath.Join(wd, "mine"); got != want {
		t.Errorf("data.cache_dir = mine: %s, want %s", got, want)
	}
	t.Setenv("MEMO_CACHE", "")
	t.Setenv("HOME", "")
	if got, want := ResolveCacheDir(""), filepath.Join(os.TempDir(), fmt.Sprintf("memo-cache-%d", os.Getuid())); got != want {
		t.Errorf("no HOME: %s, want %s", got, want)
	}
	t.Setenv("HOME", "/home/someone")
	if got := ResolveCacheDir(""); got != "/home/someone/.cache/memo" {
		t.Errorf("HOME=/home/someone: %s", got)
	}
}

// A run on another file system than the cache gets copies, and a copy has
// the entry file's read-only mode, as a hard link would.
func TestPlaceFileCopyKeepsMode(t *testing.T) {
	defer func(link func(string, string) error) { linkFile = link }(linkFile)
	linkFile = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EXDEV} }
	dir := t.TempDir()
	src := filepath.Join(dir, "entry.arrow")
	if err := os.WriteFile(src, []byte("docs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, cacheFileMode); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "run", "docs.arrow")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	how, err := placeFile(src, dst)
	if err != nil || how != "copy" {
		t.Fatalf("placeFile: %q, %v; want a copy", how, err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != cacheFileMode {
		t.Errorf("copy has mode %v, want the entry's %v", fi.Mode().Perm(), fs.FileMode(cacheFileMode))
	}
	if got, err := os.ReadFile(dst); err != nil || string(got) != "docs" {
		t.Errorf("copy holds %q, %v; want %q", got, err, "docs")
	}
	a, _ := os.Stat(src)
	if os.SameFile(a, fi) {
		t.Error("the copy is the entry's own file")
	}
}

// TestSourceChangedDuringBuild: a source file written to after the key
// hashed it and before the build finished reading it fails the build,
// and the cache keeps nothing under the key of the text it no longer
// holds; built again, it is keyed as it now is.
func TestSourceChangedDuringBuild(t *testing.T) {
	src := t.TempDir()
	n := 0
	for _, p := range strings.Split(opticksText(t), "\n\n") {
		if n < 24 && len(p) > 600 {
			writeFile(t, filepath.Join(src, fmt.Sprintf("p%02d.txt", n)), p)
			n++
		}
	}
	cfg := testConfig(t)
	cfg.Sources, cfg.Tokenizer = []string{"txt:" + src}, "bpe:300"
	cfg.Targets, cfg.Controls, cfg.Validation, cfg.MinTokens, cfg.DedupWords = 5, 5, 2, 20, 0
	_, key, err := cacheKeyInput(cfg, cfg.CacheDir)
	if err != nil {
		t.Fatal(err)
	}
	appended := filepath.Join(src, "p03.txt")
	buildHook = func() {
		f, err := os.OpenFile(appended, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if _, err := f.WriteString("\n\nA paragraph another job wrote while the dataset was built from this file."); err != nil {
			t.Error(err)
		}
	}
	defer func() { buildHook = nil }()
	err = Build(context.Background(), cfg, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), appended+" changed while the dataset was built") {
		t.Fatalf("Build = %v, want the changed file named", err)
	}
	if got := cacheEntries(t, cfg.CacheDir); len(got) != 0 {
		t.Errorf("cache holds %v after the failed build, want nothing (the key was %s)", got, key)
	}
	buildHook = nil
	dir := t.TempDir()
	if err := Build(context.Background(), cfg, dir); err != nil {
		t.Fatalf("Build again: %v", err)
	}
	if l := readCacheLink(t, dir); l.Key == key {
		t.Errorf("rebuilt under the old text's key %s", key)
	}
}

// TestSourceAddedDuringBuild: a .txt file added to a txt: directory after
// the key listed it fails the build, and nothing is cached.
func TestSourceAddedDuringBuild(t *testing.T) {
	src := t.TempDir()
	paras := strings.Split(opticksText(t), "\n\n")
	n := 0
	for _, p := range paras {
		if n < 24 && len(p) > 600 {
			writeFile(t, filepath.Join(src, fmt.Sprintf("p%02d.txt", n)), p)
			n++
		}
	}
	cfg := testConfig(t)
	cfg.Sources, cfg.Tokenizer = []string{"txt:" + src}, "bpe:300"
	cfg.Targets, cfg.Controls, cfg.Validation, cfg.MinTokens, cfg.DedupWords = 5, 5, 2, 20, 0
	buildHook = func() { writeFile(t, filepath.Join(src, "sub", "late.txt"), paras[len(paras)-2]) }
	defer func() { buildHook = nil }()
	err := Build(context.Background(), cfg, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "gained or lost .txt files") {
		t.Fatalf("Build = %v, want the directory named", err)
	}
	if got := cacheEntries(t, cfg.CacheDir); len(got) != 0 {
		t.Errorf("cache holds %v after the failed build, want nothing", got)
	}
}
