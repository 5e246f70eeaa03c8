package loss

import (
	"slices"
	"strings"
	"testing"
)

func TestParseIDsJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    []int32
		wantErr string
	}{
		{"[1, 2, 3]", []int32{1, 2, 3}, ""},
		{" [ ]\n", []int32{}, ""},
		{"[2147483647, 1, 0]", []int32{2147483647, 1, 0}, ""},
		{"[1, -1]", nil, "element 1 is -1: want an integer token id in [0, 2147483647]"},
		{"[1, 2.5]", nil, "element 1 is 2.5: want an integer token id"},
		{"[1, 1e3]", nil, "element 1 is 1e3"},
		{`[1, "7"]`, nil, `element 1 is "7"`},
		{"[2147483648]", nil, "element 0 is 2147483648"},
		{"[[1]]", nil, "element 0 is [1]"},
		{"", nil, "empty input"},
		{"null", nil, "found null: want a JSON array"},
		{"7", nil, "found a number"},
		{"{}", nil, `an object without an "ids" array`},
		{`{"ids": null}`, nil, `an object without an "ids" array`},
		// memo tokenize's output pipes into memo mask --ids-json -.
		{`{"ids":[256,101,10]}`, []int32{256, 101, 10}, ""},
		{`{"ids":[1,-2]}`, nil, "ids element 1 is -2"},
		{"[1] [2]", nil, "data after the JSON value"},
		{"[1,", nil, "not JSON"},
	}
	for _, tt := range tests {
		got, err := ParseIDsJSON(strings.NewReader(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%q: got %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestMarkDropped(t *testing.T) {
	words := map[int32]string{1: "The", 2: " cat", 3: " sat", 4: " on", 5: " it"}
	decode := func(ids []int32) string {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(words[id])
		}
		return b.String()
	}
	got, exact := MarkDropped([]int32{1, 2, 3, 4, 5}, []bool{false, true, true, false, true}, decode, "[[", "]]")
	if want := "The[[ cat sat]] on[[ it]]"; got != want || !exact {
		t.Errorf("got %q (exact %v), want %q", got, exact, want)
	}
	if got, _ := MarkDropped(nil, nil, decode, "[[", "]]"); got != "" {
		t.Errorf("empty: %q", got)
	}
	// A byte-level tokenizer: 日 (e6 97 a5) over three tokens, a mark
	// on the middle one. The pieces join up to the whole, yet the mark
	// splits the character: not exact (it had said exact).
	bytesOf := map[int32]string{1: "\xe6", 2: "\x97", 3: "\xa5"}
	byteDecode := func(ids []int32) string {
		var b strings.Builder
		for _, id := range ids {
			b.WriteString(bytesOf[id])
		}
		return b.String()
	}
	if _, exact := MarkDropped([]int32{1, 2, 3}, []bool{false, true, false}, byteDecode, "[[", "]]"); exact {
		t.Errorf("a mark inside a character's bytes: exact")
	}
	if _, exact := MarkDropped([]int32{1, 2, 3}, []bool{true, true, true}, byteDecode, "[[", "]]"); !exact {
		t.Errorf("a mark around the whole character: not exact")
	}
}

func TestDroppedPositions(t *testing.T) {
	m := mustNew(t, Config{Strategy: StrategyStatic, K: 3, Start: 1})
	if got := DroppedPositions(m, []int32{9, 9, 9, 9, 9}); !slices.Equal(got, []int{1, 4}) {
		t.Errorf("got %v", got)
	}
	if got := DroppedPositions(m, nil); got == nil || len(got) != 0 {
		t.Errorf("empty input gave %#v, want an empty non-nil slice (JSON [])", got)
	}
}
