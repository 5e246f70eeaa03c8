package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
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
}

// Dir is the dataset directory (runDir/data).
func (d *Dataset) Dir() string { return d.dir }

// Report is the content of report.json.
func (d *Dataset) Report() Report { return d.report }

// Open opens runDir/data and checks that both Arrow files are readable.
func Open(runDir string) (*Dataset, error) {
	dir := filepath.Join(runDir, "data")
	rp := filepath.Join(dir, "report.json")
	raw, err := os.ReadFile(rp)
	if err != nil {
		return nil, fmt.Errorf("open dataset %s: %w (build it with `memo data build`)", dir, err)
	}
	d := &Dataset{dir: dir}
	if err := json.Unmarshal(raw, &d.report); err != nil {
		return nil, fmt.Errorf("open dataset: %s: %w", rp, err)
	}
	for _, f := range []struct {
		name   string
		schema *arrow.Schema
	}{{"docs.arrow", docsSchema}, {"tokens.arrow", tokensSchema}} {
		if err := checkArrow(filepath.Join(dir, f.name), f.schema); err != nil {
			return nil, fmt.Errorf("open dataset: %w", err)
		}
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
	var docs []Doc
	index := map[int64]int{}
	err := scanArrow(filepath.Join(d.dir, "docs.arrow"), docsSchema, func(rec arrow.Record) error {
		ids := rec.Column(0).(*array.Int64)
		src := rec.Column(1).(*array.String)
		title := rec.Column(2).(*array.String)
		text := rec.Column(3).(*array.String)
		sp := rec.Column(5).(*array.String)
		reps := rec.Column(6).(*array.Int32)
		for i := 0; i < int(rec.NumRows()); i++ {
			if split != "" && sp.Value(i) != split {
				continue
			}
			index[ids.Value(i)] = len(docs)
			docs = append(docs, Doc{ID: ids.Value(i), Source: src.Value(i), Title: title.Value(i), Text: text.Value(i),
				Split: sp.Value(i), Repetitions: int(reps.Value(i))})
		}
		return nil
	})
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

// ScanTokens streams tokens.arrow one record batch at a time; ids is only
// valid during the call (copy it to keep it). Memory stays bounded by one
// batch of batchRows documents.
func (d *Dataset) ScanTokens(fn func(docID int64, ids []int32) error) error {
	return scanArrow(filepath.Join(d.dir, "tokens.arrow"), tokensSchema, func(rec arrow.Record) error {
		docIDs := rec.Column(0).(*array.Int64)
		lists := rec.Column(1).(*array.List)
		values := lists.ListValues().(*array.Int32).Int32Values()
		offs := lists.Offsets()
		for i := 0; i < int(rec.NumRows()); i++ {
			if err := fn(docIDs.Value(i), values[offs[i]:offs[i+1]]); err != nil {
				return err
			}
		}
		return nil
	})
}
