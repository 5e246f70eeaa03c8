#!/usr/bin/env python3
"""Make or re-check the Hugging Face goldens in testdata/hf-transformers/.

Each golden is a tiny random causal LM saved by transformers itself plus
expected.json: what transformers' own modeling code computes on it, on the CPU,
in float32. memo's tests (internal/hfgolden) load the same files and must agree
within expected.json's tolerance. This script needs torch and transformers
(the GPU machine has both); it never downloads anything.

  python3 scripts/hf-goldens.py check [DIR ...]
      Recompute expected.json from each stored checkpoint and compare: exit 1
      if any value is outside its tolerance or a greedy continuation differs.
      With no DIR, every testdata/hf-transformers/*/ is checked.

  python3 scripts/hf-goldens.py make --config CONFIG.json --dtype bfloat16 \
      [--shards 7] [--seed 0] --out DIR
      Build the model CONFIG.json describes with random weights (matrices
      N(0, 0.15), biases N(0, 0.05), norm weights their identity value plus
      N(0, 0.05)), save it with save_pretrained in the given dtype (split in
      --shards files of about equal size), then write DIR/expected.json.
      The checked-in goldens were made this way; their weights came from
      another seed, so `make` reproduces their form, not their bits: `check`
      is what keeps them honest.
"""

import argparse
import json
import math
import os
import sys
import tempfile

SEQ_LEN = 24
PROMPT_LEN = 8
NEW_TOKENS = 12
TOLERANCE = {"logits": 1e-3, "nll": 1e-4}

# Families whose norm computes x * (1 + w): their identity weight is 0.
ZERO_CENTRED_NORMS = {"gemma", "gemma2", "gemma3_text", "gemma3"}


def load_float32(directory):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        directory, dtype=torch.float32, attn_implementation="eager"
    )
    model.eval()
    return model


def forward_logits(model, ids):
    import torch

    with torch.no_grad():
        return model(torch.tensor(ids, dtype=torch.long)).logits.float()


def token_nll(logits, ids):
    import torch

    targets = torch.tensor(ids, dtype=torch.long)[:, 1:]
    logp = torch.log_softmax(logits[:, :-1, :], dim=-1)
    return -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def greedy(model, prompts):
    """Argmax continuation with a full forward per step (no cache), and the
    smallest top-1/top-2 gap met, so a reader knows how close a tie came."""
    rows, gaps = [], []
    for prompt in prompts:
        seq, gap = list(prompt), math.inf
        for _ in range(NEW_TOKENS):
            last = forward_logits(model, [seq])[0, -1]
            top = last.topk(2)
            gap = min(gap, float(top.values[0] - top.values[1]))
            seq.append(int(top.indices[0]))
        rows.append(seq[len(prompt):])
        gaps.append(gap)
    return rows, gaps


def expectations(model, ids, prompts):
    logits = forward_logits(model, ids)
    nll = token_nll(logits, ids)
    continuations, gaps = greedy(model, prompts)
    return {
        "ids": ids,
        "logits_last": logits[:, SEQ_LEN - 1].tolist(),
        "logits_pos5": logits[:, 5].tolist(),
        "nll": nll.tolist(),
        "greedy_prompts": prompts,
        "greedy_continuations": continuations,
        "greedy_min_gap": gaps,
    }


def max_abs_diff(a, b):
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return math.inf
        return max((max_abs_diff(x, y) for x, y in zip(a, b)), default=0.0)
    return abs(float(a) - float(b))


def check(directories):
    failed = 0
    for directory in directories:
        want = json.load(open(os.path.join(directory, "expected.json")))
        model = load_float32(directory)
        got = expectations(model, want["ids"], want["greedy_prompts"])
        tol = want.get("tolerance", TOLERANCE)
        errs = {
            "logits": max(
                max_abs_diff(want["logits_last"], got["logits_last"]),
                max_abs_diff(want["logits_pos5"], got["logits_pos5"]),
            ),
            "nll": max_abs_diff(want["nll"], got["nll"]),
        }
        same = want["greedy_continuations"] == got["greedy_continuations"]
        ok = same and all(errs[k] <= tol[k] for k in errs)
        failed += not ok
        print(
            f"{'PASS' if ok else 'FAIL'}\t{os.path.basename(os.path.normpath(directory))}\t"
            f"logits {errs['logits']:.1e} (<= {tol['logits']:g}), nll {errs['nll']:.1e} "
            f"(<= {tol['nll']:g}), greedy {'identical' if same else 'DIFFERENT'}"
        )
    return 1 if failed else 0


def randomize(model, model_type, generator):
    import torch

    identity = 0.0 if model_type in ZERO_CENTRED_NORMS else 1.0
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float32)
            if "norm" in name or ".ln_" in name or name.endswith("ln_f.weight"):
                value = identity + 0.05 * noise if name.endswith("weight") else 0.05 * noise
            elif name.endswith("bias"):
                value = 0.05 * noise
            else:
                value = 0.15 * noise
            p.copy_(value.to(p.dtype))


def make(config_path, dtype_name, shards, seed, out):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    dtype = getattr(torch, dtype_name)
    raw = json.load(open(config_path))
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(raw, f)
        config = AutoConfig.from_pretrained(tmp)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed)
    randomize(model, config.model_type, generator)
    model = model.to(dtype)
    total = sum(p.numel() * p.element_size() for p in model.parameters())
    shard_size = total if shards <= 1 else math.ceil(total / shards)
    model.save_pretrained(out, max_shard_size=shard_size, safe_serialization=True)

    vocab = config.vocab_size
    ids = torch.randint(vocab, (2, SEQ_LEN), generator=generator).tolist()
    prompts = torch.randint(vocab, (2, PROMPT_LEN), generator=generator).tolist()
    expected = {
        "case": os.path.basename(os.path.normpath(out)),
        "weights_dtype": dtype_name,
        "shards": shards,
    }
    expected.update(expectations(load_float32(out), ids, prompts))
    import transformers

    expected["tolerance"] = TOLERANCE
    expected["made_by"] = (
        f"transformers {transformers.__version__} save_pretrained + modeling code, CPU fp32"
    )
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)
    print(f"wrote {out}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("check", help="recompute and compare the stored goldens")
    c.add_argument("dirs", nargs="*")
    m = sub.add_parser("make", help="write a new golden")
    m.add_argument("--config", required=True)
    m.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    m.add_argument("--shards", type=int, default=1)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.command == "check":
        here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "hf-transformers")
        dirs = args.dirs or sorted(
            os.path.join(here, d) for d in os.listdir(here) if os.path.isdir(os.path.join(here, d))
        )
        return check(dirs)
    return make(args.config, args.dtype, args.shards, args.seed, args.out)


if __name__ == "__main__":
    sys.exit(main())
