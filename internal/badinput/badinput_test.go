package badinput

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestPathCause(t *testing.T) {
	_, openErr := os.Open(filepath.Join(t.TempDir(), "absent.toml"))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"open error loses op and path", openErr, "no such file or directory"},
		{"wrapped path error kept whole", fmt.Errorf("reading: %w", openErr), "reading: " + openErr.Error()},
		{"other error unchanged", errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PathCause(tt.err); got.Error() != tt.want {
				t.Fatalf("PathCause(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
	if PathCause(nil) != nil {
		t.Fatal("PathCause(nil) != nil")
	}
}

func TestIsAndWrap(t *testing.T) {
	if Wrap(nil) != nil {
		t.Fatal("Wrap(nil) != nil")
	}
	base := errors.New("x")
	if Is(base) {
		t.Fatal("an unmarked error reported as bad input")
	}
	if !Is(fmt.Errorf("ctx: %w", Wrap(base))) {
		t.Fatal("a wrapped mark was not found")
	}
	if !errors.Is(Errorf("a: %w", base), base) {
		t.Fatal("Errorf lost the wrapped error")
	}
}
