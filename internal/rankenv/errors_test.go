package rankenv

import (
	"errors"
	"fmt"
	"testing"
)

// TestTag: an error is tagged with its rank once, however often it is
// tagged on its way up, and stays what it wraps.
func TestTag(t *testing.T) {
	cause := errors.New("connection reset")
	once := Tag(2, 4, cause)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"once", once, "rank 2 of 4: connection reset"},
		{"again", Tag(2, 4, once), "rank 2 of 4: connection reset"},
		{"wrapped, again", Tag(2, 4, fmt.Errorf("step 9: %w", once)), "step 9: rank 2 of 4: connection reset"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if !Tagged(tc.err) || !errors.Is(tc.err, cause) {
			t.Errorf("%s: Tagged = %v, Is(cause) = %v, want both", tc.name, Tagged(tc.err), errors.Is(tc.err, cause))
		}
	}
	if Tag(1, 2, nil) != nil {
		t.Error("Tag(nil) is not nil")
	}
	if Tagged(cause) {
		t.Error("an untagged error is Tagged")
	}
}
