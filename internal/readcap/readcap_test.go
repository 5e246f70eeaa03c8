package readcap

import (
	"io"
	"strings"
	"testing"
)

func TestAll(t *testing.T) {
	tests := []struct {
		name    string
		in      io.Reader
		max     int64
		want    string
		wantErr string
	}{
		{"under the cap", strings.NewReader("abc"), 4, "abc", ""},
		{"at the cap", strings.NewReader("abcd"), 4, "abcd", ""},
		{"past the cap", strings.NewReader("abcde"), 4, "", "longer than 4 bytes"},
		{"endless", zeros{}, 2 << 20, "", "longer than 2 MiB"},
		{"empty", strings.NewReader(""), 4, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := All(tt.in, tt.max)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("All: err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("All = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// zeros is an endless reader, as /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
