package data

import (
	"os"
	"path/filepath"
	"strings"
)

func init() { registerSourceKind(fetchedCorpus("brown", loadBrown)) }

// loadBrown reads the 500 tagged files (ca01 ... cr09) and strips the tags.
func loadBrown(dir string, r sourceReader) error {
	cats := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(dir, "cats.txt")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				cats[f[0]] = f[1]
			}
		}
	}
	files, err := globSorted(dir, "c[a-r][0-9][0-9]", "Brown files c[a-r]NN")
	if err != nil {
		return err
	}
	readEach(files, r, filepath.Base, func(name string, b []byte) (string, string) {
		if c := cats[name]; c != "" {
			name += " (" + c + ")"
		}
		return name, untagBrown(string(b))
	})
	return nil
}

// untagBrown turns Brown's "word/tag" lines back into readable text: tags
// dropped, the doubled backquote and apostrophe made into double quotes, no space before closing
// punctuation or after opening ones. Each tab-indented line of the corpus is
// one sentence and stays one line.
//
// The corpus doubles a sentence's final "?", "!", ";" or ":" (every
// sentence so ended: 2,314 "? ?", 795 "! !", 2,777 "; ;" and 23 ": :" in
// the 500 files; a known artifact, nltk/nltk_data#56), so a line-final
// repeat of one of those is dropped. An inch mark, tagged as two
// apostrophes ending the number and then a stray closing quote token,
// becomes one double quote: 1/4".
func untagBrown(s string) string {
	var out strings.Builder
	for _, line := range strings.Split(s, "\n") {
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		kept := words[:0]
		for _, w := range words {
			if j := strings.LastIndexByte(w, '/'); j > 0 {
				w = w[:j]
			}
			// Inches: 1/4" is tagged "1/4''/nn ''/''", the mark
			// doubled into a stray quote (all 61 cases).
			if n := len(kept); w == "''" && n > 0 && len(kept[n-1]) > 2 && strings.HasSuffix(kept[n-1], "''") {
				kept[n-1] = strings.TrimSuffix(kept[n-1], "''") + "\""
				continue
			}
			kept = append(kept, w)
		}
		words = kept
		if n := len(words); n >= 2 && len(words[n-1]) == 1 && strings.Contains("?!;:", words[n-1]) && words[n-1] == words[n-2] {
			words = words[:n-1]
		}
		glue := true // the next word attaches without a space
		for _, w := range words {
			space, next := !glue, false
			switch w {
			case "``":
				w, next = "\"", true
			case "(", "[":
				next = true
			case "''":
				w, space = "\"", false
			case ".", ",", ";", ":", "!", "?", ")", "]", "'", "'s", "n't":
				space = false
			}
			if space {
				out.WriteByte(' ')
			}
			out.WriteString(w)
			glue = next
		}
		out.WriteByte('\n')
	}
	return out.String()
}
