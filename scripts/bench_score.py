#!/usr/bin/env python3
"""Teacher-forced scoring in PyTorch + transformers, to compare with `memo bench score`.

Optional: needs PyTorch and transformers. Never run by tests or CI
(scripts/gpu-check.sh --large runs it on a GPU). It loads --model DIR (a Hugging
Face directory) with AutoModelForCausalLM and scores --batch random rows of --seq
+ 1 tokens as `memo bench score` does: one forward pass, the log-softmax over
the vocabulary in float32, each token's NLL copied to the host; one warm-up run,
then --reps measured ones. --autocast bf16 runs the forward under
torch.autocast(bfloat16) on float32 weights; --dtype bf16 loads the weights in
bfloat16 instead (what memo's --precision bf16 holds). Prints one JSON object
with the fields of `memo bench score --json` that mean the same, memory included
(weight_bytes; device_peak_bytes, torch.cuda.max_memory_allocated, on a GPU).
--rows FILE scores the rows `memo bench score --rows-out FILE` wrote instead of
random ones, so that both mean NLLs are of the same tokens.
"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="Hugging Face model directory")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none")
    ap.add_argument("--rows", help="JSON rows of seq + 1 ids (memo bench score --rows-out)")
    a = ap.parse_args()
    from transformers import AutoModelForCausalLM

    dev = torch.device(a.device)
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    m = AutoModelForCausalLM.from_pretrained(a.model, dtype=dtype, attn_implementation="sdpa").to(dev).eval()
    vocab = m.config.vocab_size
    gen = torch.Generator().manual_seed(a.seed)
    if a.rows:
        ids = torch.tensor(json.load(open(a.rows)), dtype=torch.long).to(dev)
        a.batch, a.seq = ids.shape[0], ids.shape[1] - 1
    else:
        ids = torch.randint(vocab, (a.batch, a.seq + 1), generator=gen).to(dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    total, nll_sum, count = 0.0, 0.0, 0
    with torch.no_grad():
        for r in range(1 + a.reps):
            sync()
            t0 = time.perf_counter()
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
                logits = m(ids[:, :-1]).logits
            lp = logits.float().log_softmax(-1)
            nll = -lp.gather(-1, ids[:, 1:, None]).squeeze(-1).cpu()
            if r >= 1:
                total += time.perf_counter() - t0
                nll_sum += nll.double().sum().item()
                count += nll.numel()
    params = sum(p.numel() for p in m.parameters())
    out = {"model_dir": a.model, "params": params, "vocab": vocab, "seq": a.seq, "batch": a.batch,
           "device": str(dev), "dtype": a.dtype, "autocast": a.autocast, "reps": a.reps,
           "tokens_per_s": a.batch * a.seq * a.reps / total, "run_s": total / a.reps,
           "mean_nll": nll_sum / count,
           "weight_bytes": sum(p.numel() * p.element_size() for p in m.parameters())}
    if dev.type == "cuda":
        out["device_peak_bytes"] = torch.cuda.max_memory_allocated(dev)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
