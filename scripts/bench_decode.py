#!/usr/bin/env python3
"""A plain PyTorch eager KV-cache greedy loop, to compare with `memo bench decode`.

Optional: needs PyTorch (Debian: apt-get install python3-torch). Never run by
tests or CI. It builds memo's llama layout (RMSNorm, rotary rotate-half,
SwiGLU, tied LM head, N(0, 0.02) weights) at a preset's size, feeds --batch
random prompts of --prefix tokens, then greedily generates --suffix tokens
per row with a cache grown by torch.cat, as a straightforward loop would,
and prints the same JSON fields as `memo bench decode --json`. With
--decoding sample --samples S it draws S samples per prompt at temperature 1
over the whole vocabulary (top-k 0) as memo's attack does: each prompt runs
once, its cache is copied to its S rows (memo's Reorder), and every row
sums the log-probability of its draws; tokens/s then counts
batch x samples x suffix tokens. Like memo,
the prompt pass runs the LM head on each row's last position only (the one
whose logits choose the first token); --full-head runs it on every position.

Compare like with like: same machine, same OPENBLAS_* environment, same
--threads, and the allocator settings memo restarts itself with:

  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=17179869184:glibc.malloc.top_pad=1073741824 \\
    python3 scripts/bench_decode.py --preset small --vocab 4096 --prefix 256 --suffix 50 --batch 8 --threads 1
"""
import argparse
import json
import math
import time

import torch

# dim, layers, heads: model/config.go's presets.
PRESETS = {"nano": (64, 2, 4), "tiny": (128, 2, 4), "small": (256, 4, 8), "medium": (512, 6, 8), "base": (768, 12, 12)}


def ffn_size(dim):
    """model.DefaultFFN: 8d/3 rounded up to a multiple of 8."""
    return ((8 * dim + 2) // 3 + 7) // 8 * 8


class Model:
    def __init__(self, vocab, dim, layers, heads, context, gen, full_head=False):
        self.full_head = full_head
        normal = lambda *shape: torch.randn(*shape, generator=gen) * 0.02
        self.heads, self.hd = heads, dim // heads
        f = ffn_size(dim)
        self.embed = normal(vocab, dim)
        self.blocks = [dict(n1=torch.ones(dim), q=normal(dim, dim), k=normal(dim, dim), v=normal(dim, dim),
                            o=normal(dim, dim), n2=torch.ones(dim), gate=normal(f, dim), up=normal(f, dim),
                            down=normal(dim, f)) for _ in range(layers)]
        self.norm = torch.ones(dim)
        inv = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2, dtype=torch.float64) / self.hd))
        ang = torch.arange(context, dtype=torch.float64)[:, None] * inv[None, :]
        self.cos = torch.cat([ang.cos(), ang.cos()], -1).float()
        self.sin = torch.cat([ang.sin(), ang.sin()], -1).float()

    @staticmethod
    def rms(x, w):
        return x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-5) * w

    def rope(self, x, pos):
        cos, sin = self.cos[pos], self.sin[pos]
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def forward(self, ids, cache, start):
        b, t = ids.shape
        x = self.embed[ids]
        pos = torch.arange(start, start + t)
        for i, blk in enumerate(self.blocks):
            h = self.rms(x, blk["n1"])
            q, k, v = (torch.nn.functional.linear(h, blk[n]).view(b, t, self.heads, self.hd).transpose(1, 2)
                       for n in ("q", "k", "v"))
            q, k = self.rope(q, pos), self.rope(k, pos)
            if cache[i] is not None:
                k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
            cache[i] = (k, v)
            s = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
            if t > 1:
                s = s + torch.full((t, k.shape[2]), float("-inf")).triu(start + 1)
            a = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, -1)
            x = x + torch.nn.functional.linear(a, blk["o"])
            h = self.rms(x, blk["n2"])
            m = torch.nn.functional.silu(torch.nn.functional.linear(h, blk["gate"])) * torch.nn.functional.linear(h, blk["up"])
            x = x + torch.nn.functional.linear(m, blk["down"])
        if not self.full_head:
            x = x[:, -1:]
        return torch.nn.functional.linear(self.rms(x, self.norm), self.embed)[:, -1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small", choices=sorted(PRESETS))
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--prefix", type=int, default=256)
    ap.add_argument("--suffix", type=int, default=50)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--decoding", default="greedy", choices=["greedy", "sample"])
    ap.add_argument("--samples", type=int, default=1, help="samples per prompt of --decoding sample (their prompt's cache shared)")
    ap.add_argument("--full-head", action="store_true",
                    help="run the LM head on every prompt position (memo before its last-position head), not the last only")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    gen = torch.Generator().manual_seed(a.seed)
    dim, layers, heads = PRESETS[a.preset]
    m = Model(a.vocab, dim, layers, heads, a.prefix + a.suffix, gen, a.full_head)
    prompts = torch.randint(a.vocab, (a.batch, a.prefix), generator=gen)
    samples = a.samples if a.decoding == "sample" else 1
    prefill = total = 0.0
    with torch.inference_mode():
        for r in range(1 + a.reps):  # one warm-up run
            cache = [None] * layers
            t0 = time.perf_counter()
            logits = m.forward(prompts, cache, 0)
            if a.decoding == "sample":
                t1 = time.perf_counter()
                sample(m, logits, cache, a.prefix, a.suffix, samples, a.seed + r)
            else:
                tok = logits.argmax(-1)
                t1 = time.perf_counter()
                for step in range(a.suffix - 1):
                    tok = m.forward(tok[:, None], cache, a.prefix + step).argmax(-1)
            t2 = time.perf_counter()
            if r > 0:
                prefill += t1 - t0
                total += t2 - t0
    print(json.dumps({"preset": a.preset, "vocab": a.vocab, "prefix": a.prefix, "suffix": a.suffix, "batch": a.batch,
                      "decoding": a.decoding, "samples": samples, "rows": a.batch * samples,
                      "threads": torch.get_num_threads(), "reps": a.reps, "full_head": a.full_head,
                      "tokens_per_s": a.batch * samples * a.suffix * a.reps / total,
                      "prefill_s": prefill / a.reps, "decode_s": (total - prefill) / a.reps}))


def sample(m, logits, cache, prefix, suffix, samples, seed):
    """Draws samples continuations of suffix tokens per prompt from the prompt
    pass's logits [B, V] and cache: the cache is copied to B x samples rows
    (row p*samples + j is draw j of prompt p) and the log-probability of every
    draw is summed, as memo's decoder does; one generator draws every row's
    token at once (memo draws each row's in Go from its own generator)."""
    rows = logits.shape[0] * samples
    for i, (k, v) in enumerate(cache):
        cache[i] = (k.repeat_interleave(samples, 0), v.repeat_interleave(samples, 0))
    logits = logits.repeat_interleave(samples, 0)
    gen = torch.Generator().manual_seed(seed)
    logp = torch.zeros(rows, dtype=torch.float64)
    for step in range(suffix):
        lp = logits.double().log_softmax(-1)
        tok = torch.multinomial(lp.exp(), 1, generator=gen)[:, 0]
        logp += lp.gather(1, tok[:, None])[:, 0]
        if step == suffix - 1:
            break
        logits = m.forward(tok[:, None], cache, prefix + step)
    return logp


if __name__ == "__main__":
    main()
