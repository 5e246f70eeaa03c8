package data

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"

	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
)

// PadID marks padding in training rows: the loss ignores such targets and
// the trainer must replace it in inputs (e.g. by EOS) before embedding.
const PadID int32 = -1

// Doc is one document of the dataset with its token ids.
type Doc struct {
	ID          int64
	Source      string
	Title       string
	Text        string
	IDs         []int32
	Split       string
	Repetitions int
}

// Dataset is a built dataset in runDir/data.
type Dataset struct {
	dir    string
	report Report

	once sync.Once
	tok  *Tokenizer
	terr error

	// The training documents' tokens for Stream, read once.
	trainOnce sync.Once
	train     *trainDocs
	trainErr  error

	// members, when set (WithMembers), replaces docs.arrow's targets as
	// the candidates trained on: doc_id → repetitions.
	members map[int64]int32
}

// WithMembers is the dataset with another membership: the training stream
// holds the background as docs.arrow says and, of the candidate pool
// (targets and controls), exactly the documents of members, each repeated
// the count it maps to. A calibrated attack's reference models train on
// such views, each on its own half of the pool; the files are shared and
// nothing is written. A doc_id outside the pool is an error.
func (d *Dataset) WithMembers(members map[int64]int32) (*Dataset, error) {
	pool := map[int64]bool{}
	for _, split := range []string{SplitTarget, SplitControl} {
		docs, err := d.Docs(split)
		if err != nil {
			return nil, err
		}
		for _, doc := range docs {
			pool[doc.ID] = true
		}
	}
	m := make(map[int64]int32, len(members))
	for id, reps := range members {
		if !pool[id] {
			return nil, fmt.Errorf("members: doc_id %d of %s is not a target or a control", id, d.dir)
		}
		if reps < 1 {
			return nil, fmt.Errorf("members: doc_id %d: repetitions %d, want >= 1", id, reps)
		}
		m[id] = reps
	}
	return &Dataset{dir: d.dir, report: d.report, members: m}, nil
}

// trainedAs says whether a document of split is in the training stream
// and how often.
func (d *Dataset) trainedAs(id int64, split string, reps int32) (bool, int32) {
	if split == SplitBackground {
		return true, reps
	}
	if d.members == nil {
		return split == SplitTarget, reps
	}
	if split != SplitTarget && split != SplitControl {
		return false, 0
	}
	r, ok := d.members[id]
	return ok, r
}

// Dir is the dataset directory (runDir/data).
func (d *Dataset) Dir() string { return d.dir }

// Report is the content of report.json.
func (d *Dataset) Report() Report { return d.report }

// Digest names the dataset's contents: the sha256 of its files' names
// and sha256 as report.json records them (verified by Open), one per
// line in name order. A model's checkpoints record it, so that training
// never resumes on a dataset rebuilt with other documents. A view with
// other members (WithMembers) has its parent's digest.
func (d *Dataset) Digest() string {
	names := make([]string, 0, len(d.report.Files))
	for name := range d.report.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s %s\n", name, d.report.Files[name].SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Open opens runDir/data, checks that both Arrow files are readable and
// that every file is the one report.json's checksums describe.
func Open(runDir string) (*Dataset, error) {
	return openDir(filepath.Join(runDir, "data"))
}

// openDir opens the dataset files in dir.
func openDir(dir string) (*Dataset, error) {
	for _, p := range []string{dir, filepath.Dir(dir)} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			// Not "open FILE/data/report.json: not a directory (build it
			// with memo data build)" for a dataset that may well exist.
			return nil, badinput.Errorf("open dataset: %s is a file: want a run directory, its data/ or a dataset cache entry", p)
		}
	}
	rp := filepath.Join(dir, "report.json")
	raw, err := os.ReadFile(rp)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// A path that names no dataset (a file, a typo) is the user's.
		return nil, badinput.Errorf("open dataset %s: %w (build it with `memo data build`)", dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open dataset %s: %w (build it with `memo data build`)", dir, err)
	}
	// A damaged or changed dataset file is bad input (exit 2) from every
	// command that opens it: the user's run directory, not the machine.
	d := &Dataset{dir: dir}
	if err := json.Unmarshal(raw, &d.report); err != nil {
		return nil, badinput.Errorf("open dataset: %s: %w", rp, err)
	}
	for _, f := range []struct {
		name   string
		schema *arrow.Schema
	}{{"docs.arrow", runfiles.DocsSchema}, {"tokens.arrow", runfiles.TokensSchema}} {
		if err := checkArrow(filepath.Join(dir, f.name), f.schema); err != nil {
			return nil, badinput.Errorf("open dataset: %w", err)
		}
	}
	if err := verifyFiles(dir, d.report.Files); err != nil {
		return nil, badinput.Errorf("open dataset: %w", err)
	}
	return d, nil
}

func checkArrow(path string, schema *arrow.Schema) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return scanArrowHeader(f, path, schema)
}

// Tokenizer loads the dataset's tokenizer.json (once).
func (d *Dataset) Tokenizer() (*Tokenizer, error) {
	d.once.Do(func() { d.tok, d.terr = LoadTokenizer(filepath.Join(d.dir, "tokenizer.json")) })
	return d.tok, d.terr
}

// Docs returns the documents of one split ("" for all), by doc_id.
func (d *Dataset) Docs(split string) ([]Doc, error) {
	switch split {
	case "", SplitTarget, SplitControl, SplitBackground, SplitValidation:
	default:
		return nil, fmt.Errorf("split %q: want target, control, background, validation or \"\" for all", split)
	}
	path := filepath.Join(d.dir, "docs.arrow")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	docs, index, err := scanDocs(path, f, split)
	if err != nil {
		return nil, err
	}
	found := make([]bool, len(docs))
	err = d.ScanTokens(func(id int64, toks []int32) error {
		if j, ok := index[id]; ok {
			docs[j].IDs = append(make([]int32, 0, len(toks)), toks...)
			found[j] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for j, doc := range docs {
		if !found[j] {
			return nil, fmt.Errorf("read %s: doc_id %d (%s) has no row in tokens.arrow", d.dir, doc.ID, doc.Title)
		}
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	return docs, nil
}

// scanDocs reads the documents of one split from a docs.arrow in src, and
// their indices by doc_id.
func scanDocs(path string, src arrowsafe.Source, split string) ([]Doc, map[int64]int, error) {
	var docs []Doc
	index := map[int64]int{}
	err := scanArrowFrom(path, src, runfiles.DocsSchema, func(rec arrow.Record) error {
		ids := rec.Column(0).(*array.Int64)
		source := rec.Column(1).(*array.String)
		title := rec.Column(2).(*array.String)
		text := rec.Column(3).(*array.String)
		sp := rec.Column(5).(*array.String)
		reps := rec.Column(6).(*array.Int32)
		for i := 0; i < int(rec.NumRows()); i++ {
			if split != "" && sp.Value(i) != split {
				continue
			}
			if _, dup := index[ids.Value(i)]; dup {
				return fmt.Errorf("doc_id %d appears twice; the file is corrupt, rebuild it with `memo data build`", ids.Value(i))
			}
			index[ids.Value(i)] = len(docs)
			index[ids.Value(i)] = len(docs)
			docs = append(docs, Doc{ID: ids.Value(i), Source: source.Value(i), Title: title.Value(i), Text: text.Value(i),
				Split: sp.Value(i), Repetitions: int(reps.Value(i))})
		}
		return nil
	})
	return docs, index, err
}

// ScanTokens streams tokens.arrow one record batch at a time; ids is only
// valid during the call (copy it to keep it). Memory stays bounded by one
// batch of batchRows documents.
// Every id is checked against the vocabulary of report.json first: an id
// outside it would reach libtorch's embedding as an index error (a C++
// exception), so it is an error naming the file, document and id here.
func (d *Dataset) ScanTokens(fn func(docID int64, ids []int32) error) error {
	path := filepath.Join(d.dir, "tokens.arrow")
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	return scanTokens(path, f, d.report.VocabSize, fn)
}

// scanTokens reads a tokens.arrow from src; vocab > 0 bounds the ids.
func scanTokens(path string, src arrowsafe.Source, vocab int, fn func(docID int64, ids []int32) error) error {
	return scanArrowFrom(path, src, runfiles.TokensSchema, func(rec arrow.Record) error {
		docIDs := rec.Column(0).(*array.Int64)
		lists := rec.Column(1).(*array.List)
		for i := 0; i < int(rec.NumRows()); i++ {
			start, end := lists.ValueOffsets(i)
			ids := lists.ListValues().(*array.Int32).Int32Values()[start:end]
			for k, id := range ids {
				if id < 0 || (vocab > 0 && int(id) >= vocab) {
					return fmt.Errorf("doc_id %d: token %d is id %d, outside the vocabulary of %d ids (report.json); the file is corrupt, rebuild it with `memo data build`",
						docIDs.Value(i), k, id, vocab)
				}
			}
			if err := fn(docIDs.Value(i), ids); err != nil {
				return err
			}
		}
		return nil
	})
}
