#!/usr/bin/env python3
"""Check a memo LoRA adapter directory with the peft library itself.

memo writes a LoRA run's checkpoints in PEFT's layout (adapter_config.json,
adapter_model.safetensors with PEFT's tensor names; checkpoint/peft.go). Go
tests check the names and shapes; this script checks what issue 40 asks of
them on a machine with torch, transformers and peft (a lent GPU machine; it
runs on the CPU in float32):

  1. PeftModel.from_pretrained(base, adapter) loads every tensor of the file
     and nothing is left over: no missing or unexpected key (peft's own
     warnings are caught and fail the check), every lora_A / lora_B of the
     model equals the file's tensor of the same name, and peft_config holds
     the file's r, lora_alpha, target_modules and fan_in_fan_out.
  2. The adapted model's logits on memo's rows equal memo's own (memo score
     --logits-out on the LoRA run: base + adapters, unmerged) to --tol, and
     differ from the base's by more than 100 × --tol (the adapters must
     change something, or the comparison proves nothing).
  3. merge_and_unload()'s logits equal memo export --merge's directory
     loaded by transformers (and memo's logits) to --tol.

Prints one line per comparison and, last, a JSON summary; exits 1 when a
check fails, 2 on bad arguments.

  python3 scripts/peft_check.py --base BASE --adapter RUN/checkpoints/step-N \\
      --memo-logits lora-logits.json [--memo-base-logits base-logits.json] \\
      [--merged MERGED] [--tol 1e-4] [--json-out FILE]
"""

import argparse
import json
import os
import sys
import warnings


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", required=True, help="the base model, a Hugging Face directory")
    p.add_argument("--adapter", required=True, help="memo's adapter directory (a LoRA run's checkpoint)")
    p.add_argument("--memo-logits", required=True,
                   help="memo score --logits-out's file on the LoRA run: {ids, logits[row][pos][vocab]}")
    p.add_argument("--memo-base-logits", help="the same for the base (memo's base beside transformers')")
    p.add_argument("--merged", help="memo export --merge's directory")
    p.add_argument("--tol", type=float, default=1e-4, help="largest absolute logit difference allowed")
    p.add_argument("--json-out", help="also write the summary JSON to this file")
    a = p.parse_args()
    for f in (a.base, a.adapter, a.merged):
        if f and not os.path.isdir(f):
            p.error("%s is not a directory" % f)
    return a


def main():
    a = parse()
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM
    import peft
    from peft import PeftModel
    import transformers

    torch.manual_seed(0)
    memo = json.load(open(a.memo_logits))
    rows = memo["ids"]
    failures = []
    summary = {"torch": torch.__version__, "transformers": transformers.__version__,
               "peft": peft.__version__, "rows": len(rows), "tol": a.tol}

    def load(d):
        return AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()

    @torch.no_grad()
    def logits(model):
        # Row by row (memo's rows may differ in length); memo's file holds
        # positions 0 … len−2, the ones that predict a next token.
        return [model(torch.tensor([r], dtype=torch.long)).logits[0, : len(r) - 1].float() for r in rows]

    def diff(x, y):
        return max(float((u - v).abs().max()) for u, v in zip(x, y))

    def as_tensors(js):
        return [torch.tensor(r, dtype=torch.float32) for r in js["logits"]]

    def check(name, value, ok, what):
        summary[name] = value
        print("%-34s %.3g  %s" % (name, value, "ok" if ok else "FAIL: " + what))
        if not ok:
            failures.append(name)

    memo_adapted = as_tensors(memo)
    base = load(a.base)
    base_logits = logits(base)
    if a.memo_base_logits:
        d = diff(base_logits, as_tensors(json.load(open(a.memo_base_logits))))
        check("base: transformers vs memo", d, d <= a.tol, "memo reads the base otherwise than transformers")

    # Load the adapters as peft does, its warnings caught.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = PeftModel.from_pretrained(base, a.adapter).eval()
    bad = [str(w.message) for w in caught if "missing" in str(w.message).lower() or "unexpected" in str(w.message).lower()]
    summary["peft_warnings"] = [str(w.message)[:300] for w in caught]
    print("peft warnings on loading: %d (%d about missing or unexpected keys)" % (len(caught), len(bad)))
    for m in bad:
        print("  " + m[:300])
    if bad:
        failures.append("peft_keys")

    # Every tensor of the file in the model, under peft's own name for it
    # (the adapter name inserted before .weight), equal to the file's.
    saved = load_file(os.path.join(a.adapter, "adapter_model.safetensors"))
    params = dict(model.named_parameters())
    lora_params = {k for k in params if ".lora_A." in k or ".lora_B." in k}
    matched, unequal, absent = set(), [], []
    for k, t in saved.items():
        stem, leaf = k.rsplit(".", 1)
        name = "%s.default.%s" % (stem, leaf)
        if name not in params:
            absent.append(k)
            continue
        matched.add(name)
        if params[name].shape != t.shape or not torch.equal(params[name].detach().float(), t.float()):
            unequal.append(k)
    unloaded = sorted(lora_params - matched)
    summary.update({"file_tensors": len(saved), "model_lora_tensors": len(lora_params),
                    "absent": absent[:5], "unequal": unequal[:5], "not_from_file": unloaded[:5]})
    print("adapter file: %d tensors; model: %d lora tensors; %d matched by name, %d absent from the model, "
          "%d unequal, %d model tensors not in the file" % (len(saved), len(lora_params), len(matched),
                                                           len(absent), len(unequal), len(unloaded)))
    for what, names in (("absent", absent), ("unequal", unequal), ("not in the file", unloaded)):
        if names:
            print("  %s: %s" % (what, ", ".join(names[:5])))
            failures.append("tensors " + what)
    if not saved:
        failures.append("empty adapter file")

    cfg = model.peft_config["default"]
    want = json.load(open(os.path.join(a.adapter, "adapter_config.json")))
    got = {"r": cfg.r, "lora_alpha": cfg.lora_alpha, "target_modules": sorted(cfg.target_modules),
           "fan_in_fan_out": cfg.fan_in_fan_out, "peft_type": str(getattr(cfg.peft_type, "value", cfg.peft_type))}
    exp = {"r": want["r"], "lora_alpha": want["lora_alpha"], "target_modules": sorted(want["target_modules"]),
           "fan_in_fan_out": want["fan_in_fan_out"], "peft_type": want["peft_type"]}
    summary["peft_config"] = got
    print("peft_config: %s%s" % (got, "" if got == exp else "  FAIL: the file says %s" % exp))
    if got != exp:
        failures.append("peft_config")

    adapted = logits(model)
    check("adapted: peft vs memo", diff(adapted, memo_adapted), diff(adapted, memo_adapted) <= a.tol,
          "peft's adapted model is not memo's")
    moved = diff(adapted, base_logits)
    check("adapted vs base (must move)", moved, moved > 100 * a.tol,
          "the adapters barely change the logits, so the comparison above proves little")

    merged = model.merge_and_unload().eval()
    merged_logits = logits(merged)
    check("peft merged vs unmerged", diff(merged_logits, adapted), diff(merged_logits, adapted) <= a.tol,
          "peft's merge_and_unload changed the logits")
    if a.merged:
        memo_merged = logits(load(a.merged))
        d = diff(merged_logits, memo_merged)
        check("merged: peft vs memo export", d, d <= a.tol, "memo export --merge is not peft's merge_and_unload")
        d = diff(memo_merged, memo_adapted)
        check("memo export (transformers) vs memo", d, d <= a.tol, "the merged export does not compute memo's adapted model")

    summary["failures"] = failures
    summary["ok"] = not failures
    line = json.dumps(summary)
    if a.json_out:
        with open(a.json_out, "w") as f:
            f.write(line + "\n")
    print(line)
    print("peft check: %s" % ("PASS" if not failures else "FAIL (%s)" % ", ".join(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
