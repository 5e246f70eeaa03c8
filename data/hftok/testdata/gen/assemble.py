import json, sys
# argv[1]: where to write variants.json
vs=json.load(open('v/variants.json'))
texts=json.load(open('v/texts.json'))
nfixed=len(texts)-300  # the last 300 texts are random strings
full={"llama3-as-is","llama2-as-is","llama3-split-pieces","gpt2-regex-pieces"}
out={"about":"Hugging Face tokenizers library output for edited tokenizer.json files; how it was made: README.md in this directory.","variants":[]}
for v in vs:
    cases=json.load(open('v/out-%s.json'%v["name"]))
    if v["name"] not in full: cases=cases[:nfixed]
    v["cases"]=cases
    out["variants"].append(v)
s=json.dumps(out, ensure_ascii=False, separators=(',',':')).replace('},{"text"','},\n{"text"')
open(sys.argv[1],'w').write(s)
