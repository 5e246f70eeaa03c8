package experiments

import "testing"

// TestTokenizerLoadedOnce: the checks of a spec that compares data.tokenizer
// with two models (model.init_from, extract.reference) parse the tokenizer
// file once, not once per model.
func TestTokenizerLoadedOnce(t *testing.T) {
	loads := 0
	saved := loadTokenizerVocab
	t.Cleanup(func() { loadTokenizerVocab = saved })
	loadTokenizerVocab = func(string) (int, error) { loads++; return 8, nil }
	const hf = "../testdata/hf/llama-gqa-tied"
	doc := "[data]\ntokenizer = 'hf:" + hf + "'\n[model]\ninit_from = 'hf:" + hf + "'\n[train]\nblock = 16\n[extract]\nreference = 'hf:" + hf + "'\nmode = 'fixed'\nprefix = 4\nsuffix = 4\n"
	if _, err := ParseBytes("x.toml", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if loads != 1 {
		t.Errorf("the tokenizer was loaded %d times, want 1", loads)
	}
}
