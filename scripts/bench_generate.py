#!/usr/bin/env python3
"""Greedy decoding by transformers' generate, to compare with `memo bench decode`.

Optional: needs PyTorch and transformers (5.x; 4.4x works too). Never run by
tests or CI (scripts/gpu/issue41-next.sh runs it on a GPU). It loads --model DIR
(a Hugging Face directory, e.g. one scripts/gpu/make_tinyllama.py wrote) with
its weights in --dtype (bf16 by default, what memo's --precision bf16 holds) and
runs model.generate(do_sample=False, num_beams=1) on --batch prompts of --prefix
tokens for exactly --suffix new tokens: min_new_tokens = max_new_tokens, and no
EOS (a random model would otherwise stop rows early, or, with min_new_tokens and
an EOS, have the EOS logit masked, so that its greedy tokens would no longer be
the model's argmax, which memo's are). --cache static (the default) passes
cache_implementation="static": transformers then compiles the decoding step
with torch.compile where it can (--compile off passes disable_compile=True, the
static cache run eagerly). One warm-up call (the compilation, if any, happens
there), then --reps measured calls. The prompt pass is timed apart, after them, by
--reps calls of max_new_tokens=1 (prefill_s; decode_s is the rest).

Prints one JSON object with the fields of `memo bench decode --json` that mean
the same (tokens_per_s counts batch x suffix generated tokens a second;
weight_bytes; device_peak_bytes, torch.cuda.max_memory_allocated, on a GPU).
--rows FILE decodes the prompts `memo bench decode --rows-out FILE` wrote
instead of random ones and, when that file holds memo's generated ids, adds
"agreement": the fraction of generated tokens equal at the same position,
of rows equal whole, and the mean length of the common prefix (bf16 near-ties
can fall either way between two implementations, and a row parts ways after
its first difference). --ids-out FILE writes the generated ids as JSON.
"""
import argparse
import json
import time

import torch


def load_rows(path):
    """Prompts (and memo's generated ids, or None) from a --rows file: memo
    bench decode --rows-out's {"prompts": ..., "generated": ...}, or a bare
    list of prompts."""
    d = json.load(open(path))
    if isinstance(d, dict):
        return d["prompts"], d.get("generated")
    return d, None


def agreement(ours, theirs):
    """How far two lists of generated rows agree: tokens equal at the same
    position, rows equal whole, mean common-prefix length."""
    tok = same_rows = prefix = total = 0
    for a, b in zip(ours, theirs):
        n = min(len(a), len(b))
        tok += sum(1 for i in range(n) if a[i] == b[i])
        total += max(len(a), len(b))
        same_rows += a == b
        k = 0
        while k < n and a[k] == b[k]:
            k += 1
        prefix += k
    rows = max(len(ours), 1)
    return {"token_fraction": tok / max(total, 1), "row_fraction": same_rows / rows,
            "mean_common_prefix": prefix / rows, "rows": len(ours)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="Hugging Face model directory")
    ap.add_argument("--prefix", type=int, default=32, help="prompt tokens")
    ap.add_argument("--suffix", type=int, default=32, help="tokens generated per row")
    ap.add_argument("--batch", type=int, default=256, help="prompts decoded together")
    ap.add_argument("--reps", type=int, default=3, help="measured runs, after one warm-up run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="bf16")
    ap.add_argument("--cache", choices=["static", "dynamic"], default="static")
    ap.add_argument("--compile", choices=["auto", "off"], default="auto",
                    help="auto: generate's own choice (compiles a static cache's step on a GPU); off: disable_compile")
    ap.add_argument("--rows", help="prompts to decode (memo bench decode --rows-out), instead of random ones")
    ap.add_argument("--ids-out", help="write the generated ids to this JSON file")
    a = ap.parse_args()
    from transformers import AutoModelForCausalLM

    dev = torch.device(a.device)
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    m = AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype, attn_implementation="sdpa").to(dev).eval()
    vocab = m.config.vocab_size
    memo_ids = None
    if a.rows:
        prompts, memo_ids = load_rows(a.rows)
        ids = torch.tensor(prompts, dtype=torch.long)
        a.batch, a.prefix = ids.shape
        if memo_ids:
            a.suffix = len(memo_ids[0])
    else:
        ids = torch.randint(vocab, (a.batch, a.prefix), generator=torch.Generator().manual_seed(a.seed))
    ids = ids.to(dev)
    mask = torch.ones_like(ids)
    # No EOS: every row runs --suffix steps and each token is the argmax.
    m.generation_config.eos_token_id = None
    kw = dict(do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=0, attention_mask=mask)
    if a.cache == "static":
        kw["cache_implementation"] = "static"
    if a.compile == "off":
        kw["disable_compile"] = True
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def generate(n):
        sync()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = m.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw)
        sync()
        return out, time.perf_counter() - t0

    _, warm_s = generate(a.suffix)  # compiles, when generate compiles
    total = prefill = 0.0
    out = None
    for _ in range(a.reps):
        out, s = generate(a.suffix)
        total += s
    # After the measured calls, so that a cache or compilation made for one
    # new token cannot touch them.
    for _ in range(a.reps):
        prefill += generate(1)[1]
    gen = out[:, a.prefix:].tolist()
    if any(len(r) != a.suffix for r in gen):
        raise SystemExit(f"bench_generate: rows of {[len(r) for r in gen][:4]} tokens, want {a.suffix}")
    res = {"preset": "", "model_dir": a.model, "params": sum(p.numel() for p in m.parameters()), "vocab": vocab,
           "prefix": a.prefix, "suffix": a.suffix, "batch": a.batch, "rows": a.batch, "shared_prompt": False,
           "decoding": "greedy", "device": str(dev), "precision": a.dtype, "threads": torch.get_num_threads(),
           "reps": a.reps, "tokens_per_s": a.batch * a.suffix * a.reps / total,
           "prefill_s": prefill / a.reps, "decode_s": (total - prefill) / a.reps,
           "warmup_s": warm_s, "cache": a.cache, "compile": a.compile,
           "torch": torch.__version__, "transformers": __import__("transformers").__version__,
           "weight_bytes": sum(p.numel() * p.element_size() for p in m.parameters())}
    if dev.type == "cuda":
        res["device_peak_bytes"] = torch.cuda.max_memory_allocated(dev)
    if memo_ids:
        res["agreement"] = agreement(memo_ids, gen)
    if a.ids_out:
        with open(a.ids_out, "w") as f:
            json.dump(gen, f)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
