package data

import (
	"fmt"
	"strings"
)

// Source is a parsed data.sources entry.
type Source struct {
	Kind  string // a built-in name, or "txt", "jsonl", "parquet", "arrow"
	Path  string
	Field string // jsonl field / parquet or arrow column
}

// Name is the spelling used in docs.arrow's source column.
func (s Source) Name() string {
	switch s.Kind {
	case "txt", "jsonl", "parquet", "arrow":
		return s.Kind + ":" + s.Path
	}
	return s.Kind
}

// ParseSource parses a data.sources entry.
func ParseSource(s string) (Source, error) {
	for _, b := range BuiltinSources {
		if s == b {
			return Source{Kind: s}, nil
		}
	}
	kind, rest, ok := strings.Cut(s, ":")
	if ok && rest != "" {
		switch kind {
		case "txt":
			return Source{Kind: kind, Path: rest}, nil
		case "jsonl", "parquet", "arrow":
			path, field, _ := strings.Cut(rest, "#")
			if field == "" {
				field = "text"
			}
			if path == "" {
				break
			}
			return Source{Kind: kind, Path: path, Field: field}, nil
		}
	}
	return Source{}, fmt.Errorf("%q: want one of %s, or txt:DIR, jsonl:FILE[#field], parquet:FILE[#column], arrow:FILE[#column]", s, strings.Join(BuiltinSources, ", "))
}
