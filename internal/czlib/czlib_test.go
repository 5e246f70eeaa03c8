package czlib

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"os"
	"testing"
)

// Lengths equal Python's len(zlib.compress(text)) on texts written by
// testdata/python-zlib.json's script, where Go's compress/zlib differs.
func TestLenMatchesPython(t *testing.T) {
	raw, err := os.ReadFile("testdata/python-zlib.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Cases []struct {
			Text string `json:"text"`
			Len  int    `json:"len"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	goDiffers := 0
	for _, c := range golden.Cases {
		got, err := Len([]byte(c.Text))
		if err != nil || got != c.Len {
			t.Errorf("Len(%q) = %d, %v; Python's zlib.compress gives %d", c.Text, got, err, c.Len)
		}
		var buf bytes.Buffer
		w := zlib.NewWriter(&buf)
		w.Write([]byte(c.Text))
		w.Close()
		if buf.Len() != c.Len {
			goDiffers++
		}
	}
	t.Logf("Go's compress/zlib differs from Python on %d of %d texts", goDiffers, len(golden.Cases))
}
