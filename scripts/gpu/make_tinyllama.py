#!/usr/bin/env python3
"""Writes a randomly initialised Llama of TinyLlama-1.1B's shape (transformers'
own initialisation, bfloat16 safetensors, as the hub's TinyLlama is stored) to
DIR, for scripts/gpu-check.sh --large. Built on the GPU: on a CPU it takes
minutes. Usage: make_tinyllama.py DIR [TOKENIZER_JSON]"""
import shutil
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

out = sys.argv[1]
cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
                  num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
                  rms_norm_eps=1e-5, tie_word_embeddings=False)
torch.manual_seed(0)
with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
    m = LlamaForCausalLM(cfg)
m.to(torch.bfloat16).save_pretrained(out)  # safetensors, transformers' default
if len(sys.argv) > 2:
    shutil.copy(sys.argv[2], out + "/tokenizer.json")
print(f"{out}: {sum(p.numel() for p in m.parameters())} parameters")
