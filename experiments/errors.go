package experiments

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// ConfigError is a problem with a spec file. Its message is one line that
// names the file, the line when known, the key, and what would be valid.
type ConfigError struct {
	File string
	Line int // 0 when the problem has no single line (a cross-field check)
	Key  string
	Msg  string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" && !strings.HasPrefix(e.Msg, e.Key) {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return visible(b.String())
}

// visible escapes control characters, which a message may quote from the
// file (the TOML parser's "invalid character at start of key: \n"), so that
// an error stays one line of readable text.
func visible(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// levenshtein is the edit distance between a and b (insertions, deletions,
// substitutions), used to suggest the key a typo meant.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// closest returns the valid key nearest to key, or "" when nothing is near
// enough to be a plausible typo (more than half the key's length away).
func closest(key string, valid []string) string {
	if name, ok := otherNames[strings.ToLower(key)]; ok && slices.Contains(valid, name) {
		return name
	}
	best, bestD := "", 1<<30
	for _, v := range valid {
		d := levenshtein(strings.ToLower(key), strings.ToLower(v))
		if d < bestD || (d == bestD && v < best) {
			best, bestD = v, d
		}
	}
	if bestD > max(2, (len(key)+1)/2) {
		return ""
	}
	return best
}

// otherNames are the names other trainers (nanoGPT, Hugging Face, litgpt)
// give memo's keys: too far from memo's by spelling to be suggested by it.
var otherNames = map[string]string{
	"learning_rate": "lr", "max_lr": "lr", "max_iters": "steps", "max_steps": "steps",
	"warmup_iters": "warmup_steps", "lr_decay_iters": "steps",
	"n_layer": "layers", "num_hidden_layers": "layers", "n_head": "heads", "num_attention_heads": "heads",
	"n_embd": "dim", "hidden_size": "dim", "d_model": "dim", "vocab_size": "vocab",
	"block_size": "block", "max_position_embeddings": "context", "n_positions": "context",
	"micro_batch_size": "batch_size", "per_device_train_batch_size": "batch_size", "gradient_accumulation_steps": "grad_accum",
}

// suggestion formats the "did you mean" part of an unknown-key message.
func suggestion(key string, valid []string) string {
	if c := closest(key, valid); c != "" {
		return fmt.Sprintf("did you mean %q? ", c)
	}
	return ""
}
