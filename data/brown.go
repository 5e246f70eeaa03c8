package data

import "strings"

// untagBrown turns Brown's "word/tag" lines back into readable text: tags
// dropped, the doubled backquote and apostrophe made into double quotes, no space before closing
// punctuation or after opening ones. Each tab-indented line of the corpus is
// one sentence and stays one line.
func untagBrown(s string) string {
	var out strings.Builder
	for _, line := range strings.Split(s, "\n") {
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		glue := true // the next word attaches without a space
		for _, w := range words {
			if j := strings.LastIndexByte(w, '/'); j > 0 {
				w = w[:j]
			}
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
