package hftok

import (
	"encoding/json"
	"fmt"
	"sort"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of "added_tokens".
type addedToken struct {
	id                                             int32
	content                                        string
	special, singleWord, lstrip, rstrip, normalize bool
}

// trie finds added tokens in text the way the library's Aho-Corasick
// automaton with MatchKind::LeftmostLongest does: the match that starts
// first, and of those the longest; equal contents go to the first listed.
type trie struct {
	byFirst [256][]int // first byte -> indexes into toks, longest first
	any     bool
	toks    []*addedToken
	pats    []string // what is searched for: content, or its normalized form
}

func newTrie(toks []*addedToken, pats []string) *trie {
	t := &trie{toks: toks, pats: pats}
	for i, p := range pats {
		if p == "" {
			continue
		}
		t.byFirst[p[0]] = append(t.byFirst[p[0]], i)
		t.any = true
	}
	for _, l := range t.byFirst {
		sort.SliceStable(l, func(a, b int) bool { return len(pats[l[a]]) > len(pats[l[b]]) })
	}
	return t
}

// next returns the leftmost-longest match at or after from.
func (t *trie) next(s string, from int) (tok *addedToken, start, end int, ok bool) {
	if !t.any {
		return nil, 0, 0, false
	}
	for i := from; i < len(s); i++ {
		cands := t.byFirst[s[i]]
		for _, c := range cands {
			p := t.pats[c]
			if len(s)-i >= len(p) && s[i:i+len(p)] == p {
				return t.toks[c], i, i + len(p), true
			}
		}
	}
	return nil, 0, 0, false
}

// isWordChar is Rust regex's Unicode \w: alphabetic, marks, decimal
// digits, connector punctuation and the joiners.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r) || r == 0x200C || r == 0x200D
}

// split cuts s into pieces around the added tokens found in it, applying
// single_word, lstrip and rstrip as the library's find_matches does. A
// piece with tok != nil is that added token; the others are text. Empty
// pieces are left out.
func (t *trie) split(s string, emit func(text string, off int, tok *addedToken)) {
	startOffset := 0
	from := 0
	for {
		tok, start, stop, ok := t.next(s, from)
		if !ok {
			break
		}
		// The automaton goes on after the match itself, whatever the
		// stripping below does to the piece's bounds.
		from = stop
		if tok.singleWord {
			before, _ := utf8.DecodeLastRuneInString(s[:start])
			after, _ := utf8.DecodeRuneInString(s[stop:])
			if (start > 0 && isWordChar(before)) || (stop < len(s) && isWordChar(after)) {
				continue
			}
		}
		if tok.lstrip {
			newStart := start
			for newStart > 0 {
				r, n := utf8.DecodeLastRuneInString(s[:newStart])
				if !unicode.IsSpace(r) {
					break
				}
				newStart -= n
			}
			start = max(newStart, startOffset)
		}
		if tok.rstrip {
			for stop < len(s) {
				r, n := utf8.DecodeRuneInString(s[stop:])
				if !unicode.IsSpace(r) {
					break
				}
				stop += n
			}
		}
		if startOffset < start {
			emit(s[startOffset:start], startOffset, nil)
		}
		emit(s[start:stop], start, tok)
		startOffset = stop
	}
	if startOffset < len(s) {
		emit(s[startOffset:], startOffset, nil)
	}
}

// addedVocab is the library's AddedVocabulary.
type addedVocab struct {
	byID      map[int32]*addedToken
	byContent map[string]int32
	specials  map[string]bool
	warnings  []string
	raw       *trie // tokens with normalized=false, matched in the raw text
	norm      *trie // normalized=true, matched in the normalized text
}

// parseAdded reads "added_tokens" and gives each token the id the library
// gives it: the model's id when the model has the content, else the next
// free one after the model's vocabulary (the "id" field is only checked).
func parseAdded(raw json.RawMessage, m model, n normalizer) (*addedVocab, error) {
	av := &addedVocab{byID: map[int32]*addedToken{}, byContent: map[string]int32{}}
	var list []json.RawMessage
	if !isNull(raw) {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("tokenizer.json: added_tokens: %w", err)
		}
	}
	var specials, others []*addedToken
	seen := map[addedToken]bool{}
	specialSet := map[string]bool{}
	// With no added ids yet, the library starts new ones at the model's
	// vocabulary size (a count, not the largest id plus one).
	next := int32(m.size())
	for i, r := range list {
		o, err := parseObj(r, fmt.Sprintf("added_tokens[%d]", i))
		if err != nil {
			return nil, err
		}
		a := &addedToken{}
		var fileID int
		if fileID, err = o.integer("id", -1); err != nil {
			return nil, err
		}
		if a.content, err = o.str("content", ""); err != nil {
			return nil, err
		}
		if a.special, err = o.boolean("special", false); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			key string
			dst *bool
			def bool
		}{{"single_word", &a.singleWord, false}, {"lstrip", &a.lstrip, false}, {"rstrip", &a.rstrip, false}, {"normalized", &a.normalize, !a.special}} {
			if *f.dst, err = o.boolean(f.key, f.def); err != nil {
				return nil, err
			}
		}
		if err := o.done(); err != nil {
			return nil, err
		}
		if a.special && a.content != "" && !specialSet[a.content] {
			specialSet[a.content] = true
			specials = append(specials, a)
		}
		if a.content == "" || seen[*a] {
			continue
		}
		seen[*a] = true
		id, ok := av.byContent[a.content]
		if !ok {
			id, ok = m.tokenToID(a.content)
		}
		if !ok {
			id = next
			next++
		}
		if fileID >= 0 && int32(fileID) != id {
			// The library warns and uses its own id; so do we.
			av.warnings = append(av.warnings, fmt.Sprintf("tokenizer.json: added_tokens[%d] %q says id %d; the library gives it %d", i, a.content, fileID, id))
		}
		a.id = id
		av.byContent[a.content] = id
		av.byID[id] = a
		if !specialSet[a.content] {
			others = append(others, a)
		}
	}
	// Specials first, then the others, each in file order: the automaton's
	// pattern order, which breaks ties between equal contents.
	var rawToks, normToks []*addedToken
	var rawPats, normPats []string
	for _, a := range append(specials, others...) {
		a.id = av.byContent[a.content]
		if a.normalize {
			normToks = append(normToks, a)
			p := a.content
			if n != nil {
				p = n.normalize(piece{text: p}).text
			}
			normPats = append(normPats, p)
		} else {
			rawToks = append(rawToks, a)
			rawPats = append(rawPats, a.content)
		}
	}
	av.specials = specialSet
	av.raw, av.norm = newTrie(rawToks, rawPats), newTrie(normToks, normPats)
	return av, nil
}

// isSpecial reports whether id decodes to a special token's content (the
// library checks the content, so a model token with a special's text counts).
func (av *addedVocab) isSpecial(tok string) bool { return av.specials[tok] }
