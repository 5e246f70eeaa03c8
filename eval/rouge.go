package eval

import "strings"

// Rouge is one ROUGE score with its parts.
type Rouge struct{ Precision, Recall, F1 float64 }

// RougeTokens splits text the way rouge_score's default tokenizer does:
// lowercase, every character outside [a-z0-9] becomes a separator, no
// stemming. Python's lower() maps 'İ' (U+0130) to "i" and a combining
// dot, a separator there; Go's ToLower to "i" alone, which would keep
// "İstanbul" one word where rouge_score splits it. It is the one
// character whose two lowerings tokenize apart.
func RougeTokens(text string) []string {
	lower := strings.ToLower(strings.ReplaceAll(text, "\u0130", "i\u0307"))
	return strings.FieldsFunc(lower, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
}

// RougeL is the longest-common-subsequence ROUGE of prediction against
// target; either side empty scores 0.
func RougeL(target, prediction []string) Rouge {
	if len(target) == 0 || len(prediction) == 0 {
		return Rouge{}
	}
	return fscore(lcs(target, prediction), len(prediction), len(target))
}

// RougeN is the n-gram overlap ROUGE: matches are counted with
// multiplicity (the minimum of the two counts of each n-gram).
func RougeN(target, prediction []string, n int) Rouge {
	tg, pg := ngrams(target, n), ngrams(prediction, n)
	var overlap, nt, np int
	for g, c := range tg {
		overlap += min(c, pg[g])
		nt += c
	}
	for _, c := range pg {
		np += c
	}
	// rouge_score divides by max(count, 1), so an empty side scores 0.
	return fscore(overlap, max(np, 1), max(nt, 1))
}

func fscore(match, npred, ntarget int) Rouge {
	p := float64(match) / float64(npred)
	r := float64(match) / float64(ntarget)
	if p+r == 0 {
		return Rouge{Precision: p, Recall: r}
	}
	return Rouge{Precision: p, Recall: r, F1: 2 * p * r / (p + r)}
}

func ngrams(toks []string, n int) map[string]int {
	m := map[string]int{}
	for i := 0; i+n <= len(toks); i++ {
		// \x00 cannot occur inside a token, so the join is unambiguous.
		m[strings.Join(toks[i:i+n], "\x00")]++
	}
	return m
}

// lcs is the length of the longest common subsequence, in O(len(a)·len(b))
// time and O(len(b)) memory.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
