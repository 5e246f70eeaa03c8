package data

import (
	"container/heap"
	"fmt"
	"sort"

	"github.com/memo-research/memo/data/hftok"
	"github.com/memo-research/memo/internal/badinput"
)

// EOSToken is the end-of-text token of trained and GPT-2 tokenizers.
const EOSToken = "<|endoftext|>"

// trainBPE learns a byte-level BPE of vocabSize tokens (256 bytes, the
// merges, and EOS as the last id) from piece counts. It breaks ties between
// equally frequent pairs by the smaller id pair, so the same counts always
// give the same vocabulary.
func trainBPE(counts map[string]int, vocabSize int) (*Tokenizer, error) {
	if vocabSize < 257 {
		return nil, fmt.Errorf("bpe vocabulary %d: need at least 257 (256 bytes + EOS)", vocabSize)
	}
	pieces := make([]string, 0, len(counts))
	for p := range counts {
		pieces = append(pieces, p)
	}
	sort.Strings(pieces)

	tokens := make([]string, 256, vocabSize)
	for b := 0; b < 256; b++ {
		tokens[b] = hftok.ByteLevelString(string([]byte{byte(b)}))
	}
	words := make([][]int32, len(pieces))
	freq := make([]int, len(pieces))
	pairs := map[[2]int32]int{}
	where := map[[2]int32][]int32{}
	for w, p := range pieces {
		syms := make([]int32, len(p))
		for i := 0; i < len(p); i++ {
			syms[i] = int32(p[i])
		}
		words[w], freq[w] = syms, counts[p]
		for i := 0; i+1 < len(syms); i++ {
			k := [2]int32{syms[i], syms[i+1]}
			pairs[k] += freq[w]
			where[k] = append(where[k], int32(w))
		}
	}
	h := &pairHeap{}
	for k, c := range pairs {
		*h = append(*h, pairCount{k, c})
	}
	heap.Init(h)

	var merges [][2]string
	seen := make([]int32, len(words)) // merge stamp per word, to visit each once
	for len(tokens) < vocabSize-1 && h.Len() > 0 {
		top := heap.Pop(h).(pairCount)
		if cur := pairs[top.pair]; cur != top.count {
			if cur > 0 {
				heap.Push(h, pairCount{top.pair, cur})
			}
			continue
		}
		if top.count <= 0 {
			break
		}
		a, b := top.pair[0], top.pair[1]
		c := int32(len(tokens))
		tokens = append(tokens, tokens[a]+tokens[b])
		merges = append(merges, [2]string{tokens[a], tokens[b]})
		touched := map[[2]int32]bool{}
		for _, w := range where[top.pair] {
			if seen[w] == c {
				continue
			}
			seen[w] = c
			syms := words[w]
			f := freq[w]
			found := false
			for i := 0; i+1 < len(syms); i++ {
				if syms[i] == a && syms[i+1] == b {
					found = true
					break
				}
			}
			if !found {
				continue
			}
			for i := 0; i+1 < len(syms); i++ {
				pairs[[2]int32{syms[i], syms[i+1]}] -= f
			}
			out := syms[:0:0]
			for i := 0; i < len(syms); i++ {
				if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
					out = append(out, c)
					i++
				} else {
					out = append(out, syms[i])
				}
			}
			words[w] = out
			for i := 0; i+1 < len(out); i++ {
				k := [2]int32{out[i], out[i+1]}
				pairs[k] += f
				touched[k] = true
				if out[i] == c || out[i+1] == c {
					where[k] = append(where[k], w)
				}
			}
		}
		delete(pairs, top.pair)
		delete(where, top.pair)
		keys := make([][2]int32, 0, len(touched))
		for k := range touched {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return lessPair(keys[i], keys[j]) })
		for _, k := range keys {
			if cnt := pairs[k]; cnt > 0 {
				heap.Push(h, pairCount{k, cnt})
			}
		}
	}
	if len(tokens) < vocabSize-1 {
		// The model's vocabulary is sized from the spec ("bpe:N" means N ids),
		// so a smaller tokenizer would break that contract.
		return nil, badinput.Errorf("the corpus supports only %d tokens, fewer than the %d asked: lower N or add text", len(tokens)+1, vocabSize)
	}
	tokens = append(tokens, EOSToken)
	return byteLevelTokenizer(tokens, merges)
}

type pairCount struct {
	pair  [2]int32
	count int
}

func lessPair(x, y [2]int32) bool {
	if x[0] != y[0] {
		return x[0] < y[0]
	}
	return x[1] < y[1]
}

// pairHeap pops the most frequent pair, the smaller ids first among equals.
type pairHeap []pairCount

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count > h[j].count
	}
	return lessPair(h[i].pair, h[j].pair)
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairCount)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// countPieces counts the pre-tokens (hftok.SplitGPT2's pieces) of texts.
func countPieces(texts []string) map[string]int {
	counts := map[string]int{}
	for _, t := range texts {
		hftok.SplitGPT2(t, func(p string) { counts[p]++ })
	}
	return counts
}
