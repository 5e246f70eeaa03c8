package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/model"
)

// tokenizerSideFiles are the files of a Hugging Face tokenizer beside its
// tokenizer.json that AutoTokenizer reads for what tokenizer.json does
// not say: which tokens are BOS, EOS and padding, a chat template,
// model_max_length.
var tokenizerSideFiles = []string{"tokenizer_config.json", "special_tokens_map.json"}

// tokenizerCompanions are the side files of the Hugging Face tokenizer a
// run used, for its export: looked for where the run's tokenizer came
// from (data.tokenizer = "hf:PATH") and in the model it fine-tuned
// (model.init_from), and taken only from a directory whose tokenizer.json
// is the run's tokenizer (tok), since they describe that file's ids.
func tokenizerCompanions(run string, cfg model.Config, tok *data.Tokenizer) map[string][]byte {
	var dirs []string
	if rep, err := data.ReadReport(filepath.Join(run, "data")); err == nil {
		if p, ok := strings.CutPrefix(rep.Config.Tokenizer, "hf:"); ok {
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				p = filepath.Dir(p)
			}
			dirs = append(dirs, p)
		}
	}
	if p, ok := strings.CutPrefix(cfg.InitFrom, "hf:"); ok {
		dirs = append(dirs, p)
	}
	for _, dir := range dirs {
		src, err := data.LoadTokenizer("hf:" + filepath.Join(dir, checkpoint.HFTokenizerFile))
		if err != nil || !bytes.Equal(src.JSON(), tok.JSON()) {
			continue
		}
		files := map[string][]byte{}
		for _, name := range tokenizerSideFiles {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			var obj map[string]any
			if json.Unmarshal(b, &obj) != nil {
				slog.Warn("export: not a JSON object; the export goes without it", "file", filepath.Join(dir, name))
				continue
			}
			files[name] = b
		}
		return files
	}
	return nil
}
