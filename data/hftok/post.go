package hftok

import (
	"encoding/json"
)

// postProcessor adds special tokens around an encoded text. Only the
// single-sequence case matters here; offsets, type ids and pair templates
// do not change the ids of one text.
type postProcessor interface {
	process(ids []int32, addSpecial bool) []int32
	// bosEOS reports the ids put before and after the text, or -1.
	bosEOS() (bos, eos int32)
}

func parsePostProcessor(raw json.RawMessage, where string) (postProcessor, error) {
	return parseComponent(raw, where, "processors", parsePostProcessor, func(l []postProcessor) postProcessor { return seqPost(l) }, postProcessorOf)
}

// postProcessorOf reads a post-processor of type t other than Sequence from o.
func postProcessorOf(o *obj, where, t string) (postProcessor, error) {
	var (
		p   postProcessor
		err error
	)
	switch t {
	case "ByteLevel":
		// Trims offsets; ids are left alone.
		o.ignore("add_prefix_space", "trim_offsets", "use_regex")
		p = seqPost{}
	case "TemplateProcessing":
		p, err = parseTemplate(o)
		if err != nil {
			return nil, err
		}
	case "RobertaProcessing", "BertProcessing":
		var sep, cls struct {
			tok string
			id  int32
		}
		for _, f := range []struct {
			key string
			dst *struct {
				tok string
				id  int32
			}
		}{{"sep", &sep}, {"cls", &cls}} {
			var pair [2]json.RawMessage
			ok, err := o.get(f.key, &pair)
			if err != nil {
				return nil, err
			}
			if !ok || json.Unmarshal(pair[0], &f.dst.tok) != nil || json.Unmarshal(pair[1], &f.dst.id) != nil {
				return nil, o.errorf("%s: want [token, id]", f.key)
			}
		}
		o.ignore("trim_offsets", "add_prefix_space") // offsets only
		p = template{before: []int32{cls.id}, after: []int32{sep.id}}
	default:
		return nil, unsupported(where, t, "ByteLevel", "TemplateProcessing", "RobertaProcessing", "BertProcessing", "Sequence")
	}
	return p, nil
}

type seqPost []postProcessor

func (s seqPost) process(ids []int32, addSpecial bool) []int32 {
	for _, p := range s {
		ids = p.process(ids, addSpecial)
	}
	return ids
}

func (s seqPost) bosEOS() (int32, int32) {
	bos, eos := int32(-1), int32(-1)
	for _, p := range s {
		b, e := p.bosEOS()
		if bos < 0 {
			bos = b
		}
		if e >= 0 {
			eos = e
		}
	}
	return bos, eos
}

// template is a single-sequence template: ids before and after the text.
type template struct{ before, after []int32 }

func (t template) process(ids []int32, addSpecial bool) []int32 {
	if !addSpecial {
		return ids
	}
	out := make([]int32, 0, len(t.before)+len(ids)+len(t.after))
	out = append(out, t.before...)
	out = append(out, ids...)
	return append(out, t.after...)
}

func (t template) bosEOS() (int32, int32) {
	bos, eos := int32(-1), int32(-1)
	if len(t.before) > 0 {
		bos = t.before[0]
	}
	if len(t.after) > 0 {
		eos = t.after[len(t.after)-1]
	}
	return bos, eos
}

// parseTemplate reads TemplateProcessing's "single" template.
func parseTemplate(o *obj) (template, error) {
	type specialPiece struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	}
	var single []struct {
		SpecialToken *specialPiece `json:"SpecialToken"`
		Sequence     *specialPiece `json:"Sequence"`
	}
	var specials map[string]struct {
		ID     string   `json:"id"`
		IDs    []int32  `json:"ids"`
		Tokens []string `json:"tokens"`
	}
	if _, err := o.get("single", &single); err != nil {
		return template{}, err
	}
	if _, err := o.get("special_tokens", &specials); err != nil {
		return template{}, err
	}
	o.ignore("pair") // pairs of texts are not encoded here
	var t template
	seen := false
	for i, p := range single {
		switch {
		case p.Sequence != nil && p.SpecialToken == nil:
			if p.Sequence.ID != "A" || seen {
				return t, o.errorf("single[%d]: want one Sequence A, got %q", i, p.Sequence.ID)
			}
			seen = true
		case p.SpecialToken != nil && p.Sequence == nil:
			st, ok := specials[p.SpecialToken.ID]
			if !ok {
				return t, o.errorf("single[%d]: special token %q is not in special_tokens", i, p.SpecialToken.ID)
			}
			if seen {
				t.after = append(t.after, st.IDs...)
			} else {
				t.before = append(t.before, st.IDs...)
			}
		default:
			return t, o.errorf("single[%d]: want {\"SpecialToken\": ...} or {\"Sequence\": ...}", i)
		}
	}
	if !seen {
		return t, o.errorf("single has no Sequence A")
	}
	return t, nil
}
