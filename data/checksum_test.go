package data

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// TestChecksumsCatchSilentCorruption: damage the Arrow readers cannot see —
// one letter of a document's text, one token id swapped for another valid
// id — is refused when the dataset is opened, naming the file.
func TestChecksumsCatchSilentCorruption(t *testing.T) {
	ds := buildTest(t, testConfig(t))
	runDir := filepath.Dir(ds.Dir())
	if got := ds.Report().Files; len(got) != len(checksummedFiles) {
		t.Fatalf("report.json files = %v, want sums of %v", got, checksummedFiles)
	}
	docs, err := ds.Docs(SplitTarget)
	if err != nil {
		t.Fatal(err)
	}
	word := []byte(strings.Fields(docs[0].Text)[3])
	cases := []struct {
		file   string
		damage func(t *testing.T, raw []byte) []byte
	}{
		{"docs.arrow", func(t *testing.T, raw []byte) []byte {
			i := bytes.Index(raw, word)
			if i < 0 {
				t.Fatalf("%q not found in docs.arrow", word)
			}
			raw[i] ^= 0x20 // the same word with its first letter's case flipped
			return raw
		}},
		{"tokens.arrow", func(t *testing.T, raw []byte) []byte {
			// The first document's first ids, little-endian int32: the
			// first becomes its neighbour, still inside the vocabulary.
			ids := docs[0].IDs[:4]
			pat := make([]byte, 0, 16)
			for _, id := range ids {
				pat = binary.LittleEndian.AppendUint32(pat, uint32(id))
			}
			i := bytes.Index(raw, pat)
			if i < 0 {
				t.Fatalf("ids %v not found in tokens.arrow", ids)
			}
			raw[i] ^= 0x01
			return raw
		}},
		{"tokenizer.json", func(t *testing.T, raw []byte) []byte {
			return append(raw, ' ')
		}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(ds.Dir(), c.file)
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, string(c.damage(t, append([]byte(nil), orig...))))
			defer writeFile(t, path, string(orig))
			_, err = Open(runDir)
			if err == nil {
				t.Fatal("a damaged dataset was opened")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed after the build") || !errors.Is(err, arrowsafe.ErrCorrupt) {
				t.Errorf("error %v: want the checksum's, naming %s, wrapping ErrCorrupt", err, path)
			}
		})
	}
	if _, err := Open(runDir); err != nil {
		t.Fatalf("restored dataset: %v", err)
	}
}

// TestDatasetWithoutChecksumsOpens: a dataset built before report.json had
// checksums still opens (with a warning).
func TestDatasetWithoutChecksumsOpens(t *testing.T) {
	ds := buildTest(t, testConfig(t))
	rp := filepath.Join(ds.Dir(), "report.json")
	raw, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "files")
	raw, _ = json.Marshal(m)
	writeFile(t, rp, string(raw))
	if _, err := Open(filepath.Dir(ds.Dir())); err != nil {
		t.Fatalf("dataset without checksums: %v", err)
	}
}

// TestBuildThenOpenHashesOnce: a run builds its dataset (through the cache:
// a temporary directory renamed to the entry, hard-linked into the run) and
// opens it; each file is hashed by the build and not again by the open,
// because the files are the same inodes under other paths. A second build
// of the same key into another run reuses the entry and hashes nothing new
// when opened either.
func TestBuildThenOpenHashesOnce(t *testing.T) {
	cfg := testConfig(t)
	if !cfg.CacheDatasets {
		t.Fatal("the default config no longer caches datasets; this test wants the cache's moves")
	}
	before := sumFileCalls.Load()
	ds := buildTest(t, cfg)
	if got := sumFileCalls.Load() - before; got != int64(len(checksummedFiles)) {
		t.Errorf("build + open hashed %d files, want %d (once each)", got, len(checksummedFiles))
	}
	before = sumFileCalls.Load()
	if _, err := Open(filepath.Dir(ds.Dir())); err != nil {
		t.Fatal(err)
	}
	buildTest(t, cfg)
	if got := sumFileCalls.Load() - before; got != 0 {
		t.Errorf("reopening and reusing the cached build hashed %d files, want 0", got)
	}
	// A file replaced by a new one (new inode) with the same bytes is hashed
	// again: identity, not path, is what was verified.
	path := filepath.Join(ds.Dir(), "tokenizer.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(raw))
	before = sumFileCalls.Load()
	if _, err := Open(filepath.Dir(ds.Dir())); err != nil {
		t.Fatal(err)
	}
	if got := sumFileCalls.Load() - before; got != 1 {
		t.Errorf("a replaced tokenizer.json: %d files hashed on open, want 1", got)
	}
}
