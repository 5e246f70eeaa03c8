package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// File names of a model directory, as Hugging Face's save_pretrained
// writes them.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// Set is one namespace over the safetensors files of a model directory:
// a single file, or the shards an index names.
type Set struct {
	dir   string
	files []*File          // in shard-name order
	owner map[string]*File // tensor name → the file holding it
	names []string
}

// index is model.safetensors.index.json; its "metadata" (total_size and
// the like) is advisory and not read.
type index struct {
	WeightMap map[string]string `json:"weight_map"`
}

// OpenDir opens the model in dir: dir/model.safetensors when it exists,
// else dir/model.safetensors.index.json (every shard its weight_map names
// is opened and checked, and each tensor must be in the shard the map
// names). The single file comes first, as transformers' from_pretrained
// takes it: save_pretrained without shards into a directory that held a
// sharded save removes the old shards but leaves their index, and the
// index first read a model transformers does not (or refused the
// directory, naming a shard that is gone).
// The index decides what the Set holds: a tensor in a shard that the
// weight_map does not name is left out, as Hugging Face's loaders leave it.
func OpenDir(dir string) (*Set, error) {
	f, err := Open(filepath.Join(dir, SingleFile))
	if err == nil {
		s := &Set{dir: dir, files: []*File{f}, owner: map[string]*File{}, names: f.Names()}
		for _, n := range s.names {
			s.owner[n] = f
		}
		return s, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ipath := filepath.Join(dir, IndexFile)
	raw, err := os.ReadFile(ipath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: neither %s nor %s (not a safetensors model directory)", dir, SingleFile, IndexFile)
	}
	if err != nil {
		return nil, err
	}
	byShard, shards, err := parseIndex(ipath, raw)
	if err != nil {
		return nil, err
	}
	s := &Set{dir: dir, owner: make(map[string]*File, len(byShard))}
	for _, shard := range shards {
		path := filepath.Join(dir, shard)
		f, err := Open(path)
		if err != nil {
			s.Close()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: no such file (named by %s for tensor %s)", path, IndexFile, byShard[shard][0])
			}
			return nil, err
		}
		s.files = append(s.files, f)
		for _, name := range byShard[shard] {
			if _, ok := f.index[name]; !ok {
				s.Close()
				return nil, fmt.Errorf("%s: no tensor %s, which %s places in this shard", path, name, IndexFile)
			}
			s.owner[name] = f
		}
		// Shard order, then data order within the shard: the order a
		// sequential read of the directory visits them.
		for _, name := range f.Names() {
			if s.owner[name] == f {
				s.names = append(s.names, name)
			}
		}
	}
	return s, nil
}

// parseIndex reads the index file ipath holds (raw): the tensors of each
// shard, sorted, and the shard names, sorted.
func parseIndex(ipath string, raw []byte) (map[string][]string, []string, error) {
	var idx index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", ipath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("%s: weight_map is missing or empty", ipath)
	}
	dir := filepath.Dir(ipath)
	// Group the tensors by shard, remembering one tensor per shard for
	// the error when the shard is missing.
	byShard := map[string][]string{}
	for name, shard := range idx.WeightMap {
		// A shard is a file beside the index, never a path elsewhere.
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsRune(shard, '\\') {
			return nil, nil, fmt.Errorf("%s: tensor %s maps to %q, not a file name in %s", ipath, name, shard, dir)
		}
		byShard[shard] = append(byShard[shard], name)
	}
	shards := make([]string, 0, len(byShard))
	for shard, names := range byShard {
		slices.Sort(names)
		shards = append(shards, shard)
	}
	slices.Sort(shards)
	return byShard, shards, nil
}

// WeightFiles are the files that hold the model in dir, as OpenDir reads
// it: the single file when there is one, else the index and then its
// shards in name order. It opens none of the shards (a digest of the
// weights reads them).
func WeightFiles(dir string) ([]string, error) {
	single := filepath.Join(dir, SingleFile)
	if _, err := os.Stat(single); err == nil {
		return []string{single}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	ipath := filepath.Join(dir, IndexFile)
	raw, err := os.ReadFile(ipath)
	if errors.Is(err, fs.ErrNotExist) {
		return []string{single}, nil
	}
	if err != nil {
		return nil, err
	}
	_, shards, err := parseIndex(ipath, raw)
	if err != nil {
		return nil, err
	}
	files := []string{ipath}
	for _, shard := range shards {
		files = append(files, filepath.Join(dir, shard))
	}
	return files, nil
}

// Dir is the directory the Set was opened from.
func (s *Set) Dir() string { return s.dir }

// Names lists the tensors, shard by shard in file name order and in data
// order within each.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Info describes tensor name; its offsets are within the file that holds
// it (FileOf names it).
func (s *Set) Info(name string) (Info, bool) {
	f, ok := s.owner[name]
	if !ok {
		return Info{}, false
	}
	return f.Info(name)
}

// FileOf is the path of the file holding tensor name, "" if none does.
func (s *Set) FileOf(name string) string {
	if f, ok := s.owner[name]; ok {
		return f.path
	}
	return ""
}

// Metadata is the __metadata__ of the first file (shards written together
// carry the same one).
func (s *Set) Metadata() map[string]string {
	if len(s.files) == 0 {
		return nil
	}
	return s.files[0].Metadata()
}

// Float32 reads tensor name from the file that holds it (see File.Float32).
func (s *Set) Float32(name string) ([]float32, error) {
	f, ok := s.owner[name]
	if !ok {
		return nil, fmt.Errorf("%s: no tensor %s", s.dir, name)
	}
	return f.Float32(name)
}

// Float32Into reads tensor name into dst (see File.Float32Into).
func (s *Set) Float32Into(name string, dst []float32) error {
	f, ok := s.owner[name]
	if !ok {
		return fmt.Errorf("%s: no tensor %s", s.dir, name)
	}
	return f.Float32Into(name, dst)
}

// Close closes every file of the Set.
func (s *Set) Close() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	s.files = nil
	return errors.Join(errs...)
}
