package loss

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseIDsJSON reads a JSON array of token ids (non-negative int32 values),
// as `memo mask --ids-json` takes them. Errors name the offending element.
func ParseIDsJSON(r io.Reader) ([]int32, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var raw []any
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("empty input: want a JSON array of integer token ids")
		}
		return nil, fmt.Errorf("want a JSON array of integer token ids: %w", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("null: want a JSON array of integer token ids")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON array")
	}
	ids := make([]int32, len(raw))
	for i, v := range raw {
		n, ok := v.(json.Number)
		var x int64
		var err error
		if ok {
			x, err = strconv.ParseInt(string(n), 10, 64)
		}
		if !ok || err != nil || x < 0 || x > math.MaxInt32 {
			b, _ := json.Marshal(v)
			return nil, fmt.Errorf("element %d is %s: want an integer token id in [0, %d]", i, b, math.MaxInt32)
		}
		ids[i] = int32(x)
	}
	return ids, nil
}

// DroppedPositions masks ids as one row's targets and returns the indexes
// the masker drops, in increasing order (never nil).
func DroppedPositions(m Masker, ids []int32) []int {
	dropped := make([]bool, len(ids))
	m.Mask(ids, dropped)
	out := []int{}
	for i, d := range dropped {
		if d {
			out = append(out, i)
		}
	}
	return out
}

// MarkDropped renders ids as text with each run of dropped tokens wrapped
// in open and close. Runs are decoded whole, so a mark can only fall
// between tokens; exact reports whether the pieces join up to the decoding
// of all ids (a byte-level tokenizer may split a character across tokens,
// and a run boundary there shows a broken character).
func MarkDropped(ids []int32, dropped []bool, decode func([]int32) string, open, close string) (text string, exact bool) {
	var b, plain strings.Builder
	split := false
	for start := 0; start < len(ids); {
		end := start + 1
		for end < len(ids) && dropped[end] == dropped[start] {
			end++
		}
		piece := decode(ids[start:end])
		plain.WriteString(piece)
		// A byte-level tokenizer decodes any bytes, so the joined pieces
		// always equal the whole: a character cut by a mark shows as a
		// piece that is not UTF-8.
		split = split || !utf8.ValidString(piece)
		if dropped[start] {
			b.WriteString(open + piece + close)
		} else {
			b.WriteString(piece)
		}
		start = end
	}
	return b.String(), !split && plain.String() == decode(ids)
}
