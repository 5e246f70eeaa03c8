package experiments

import "testing"

// TestSpecWithBOM: a spec saved with a UTF-8 byte-order mark (as some
// editors do) parses as the same spec without it.
func TestSpecWithBOM(t *testing.T) {
	plain, err := ParseBytes("mini.toml", []byte(miniSpec))
	if err != nil {
		t.Fatal(err)
	}
	bom, err := ParseBytes("mini.toml", []byte("\ufeff"+miniSpec))
	if err != nil {
		t.Fatalf("spec with a BOM: %v", err)
	}
	h1, _ := plain.Hash()
	h2, _ := bom.Hash()
	if h1 != h2 || bom.Goldfish.K != 4 {
		t.Errorf("spec with a BOM: hash %s, k %d; want %s, 4", h2, bom.Goldfish.K, h1)
	}
}
