package data

// DecodeText turns ids into text for scoring: like Decode, but special
// tokens (EOS, padding, any added token marked special) are left out, as
// Hugging Face's decode(ids, skip_special_tokens=True) leaves them out in
// the goldfish reference's extraction. Decode keeps them, so that ids
// round-trip; a score such as RougeL must not count an EOS as a word.
func (t *Tokenizer) DecodeText(ids []int32) string {
	if t.bpe != nil {
		kept := make([]int32, 0, len(ids))
		for _, id := range ids {
			if !t.bpe.special[id] {
				kept = append(kept, id)
			}
		}
		return t.bpe.decode(kept)
	}
	in := make([]int, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && int(id) < t.VocabSize() {
			in = append(in, int(id))
		}
	}
	return t.lib.Decode(in, true)
}
