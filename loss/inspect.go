package loss

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// idsWant is what ParseIDsJSON takes, for its errors.
const idsWant = `want a JSON array of integer token ids, or {"ids": [...]} as memo tokenize prints`

// ParseIDsJSON reads token ids (non-negative int32 values) as `memo mask
// --ids-json` and `memo index count --ids-json` take them: a JSON array,
// or an object whose "ids" is one (memo tokenize's output, so the two
// commands pipe). Errors name the offending element.
func ParseIDsJSON(r io.Reader) ([]int32, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var doc json.RawMessage
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("empty input: %s", idsWant)
		}
		return nil, fmt.Errorf("not JSON (%v): %s", err, idsWant)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON value: %s", idsWant)
	}
	field := "element"
	var raw []any
	switch doc[0] {
	case '[':
		if err := decodeNumbers(doc, &raw); err != nil {
			return nil, fmt.Errorf("%v: %s", err, idsWant)
		}
	case '{':
		var obj struct {
			IDs *[]any `json:"ids"`
		}
		if err := decodeNumbers(doc, &obj); err != nil || obj.IDs == nil || *obj.IDs == nil {
			return nil, fmt.Errorf("an object without an \"ids\" array: %s", idsWant)
		}
		raw, field = *obj.IDs, "ids element"
	default:
		return nil, fmt.Errorf("found %s: %s", jsonKind(doc), idsWant)
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
			return nil, fmt.Errorf("%s %d is %s: want an integer token id in [0, %d]", field, i, b, math.MaxInt32)
		}
		ids[i] = int32(x)
	}
	return ids, nil
}

// decodeNumbers decodes one JSON value into v keeping numbers as
// json.Number, so an id too large for a float64 is still named exactly.
func decodeNumbers(doc json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	return dec.Decode(v)
}

// jsonKind names the kind of a JSON value that is neither array nor
// object.
func jsonKind(doc json.RawMessage) string {
	switch doc[0] {
	case 'n':
		return "null"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
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
