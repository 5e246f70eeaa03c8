import json, subprocess, sys
# argv[1]: testdata/tokenizers.json, whose texts come first
g=json.load(open(sys.argv[1]))
texts=[c['text'] for c in g['tokenizers']['llama3.json']]
texts += [
 "Hello <s> world</s> and <unk> too", "<s><s></s>", "a<s>b", " <s> ", "<|begin_of_text|>hi<|eot_id|>", "<|begin_of", "x<|end_of_text|>\n\n<|begin_of_text|>y",
 "\n\n\n", "   \n", "a  \t b", "end with newline\n", "two\n\nparas\n\n\nthree", "x\r\n\r\ny", "\t\t\tindent", "trailing   ",
 "'S'T'RE'Ve'M'LL'D", "he'sn't", "'ſ and 'K", "123456789 12 1 0.5", "٣٤٥ ١٢ Ⅻ ½", "ǅemal ǈ", "e\u0301te\u0301 cafe\u0301", "👩‍👩‍👧 flags 🇫🇷🇩🇪",
 "tab\there", "\u2028line\u2029para\u0085nel", "\u3000ideographic\u3000space", "mixed—dash…ellipsis", "$100 & 50% off!!!", "a,b;c:d", "A   B\n C",
 "say <mask> now", "say    <mask>   now", "[X]   after", "[X]", "a word here", "awordhere", "word", "_word_", "Light and light and LIGHT", "the ▁tok here", "hello world", "Hello World", "say hello, World", "<pad>   x", "<x> <X>",
 "   leading and trailing   ", "ﬁ ligature ① ＡＢＣ", "İstanbul", "ΣΑΣ", "\x00\x01\x1f\x7f", "eeee aeiou xyz", "x", "xx", "xxaxx",
]
import re
op=open(subprocess.check_output(['go','env','GOROOT']).decode().strip()+'/src/testdata/Isaac.Newton-Opticks.txt').read()
paras=[p for p in op.split('\n\n') if len(p)>200]
texts += paras[10:16]
import random
rng=random.Random(1)
alphabet="aZé\u0301ſSsTtRrEeVvMmLlDdK'’ 0123٣Ⅻ½\t\n\r\u00a0\u2028\u0085\u3000\u001c\u000b!?.,-_()\"🙂😀日本\u200b"
texts += ["x'ſd", "'ſé", "X'ſT"]
texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1,24))) for _ in range(300)]
json.dump(texts, open('v/texts.json','w'), ensure_ascii=False)
print(len(texts))
