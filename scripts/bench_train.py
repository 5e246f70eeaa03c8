#!/usr/bin/env python3
"""A plain PyTorch eager training loop, to compare with `memo bench train`.

Optional: needs PyTorch. Never run by tests or CI (scripts/gpu-check.sh runs it
when python3 imports torch). It builds memo's llama layout (RMSNorm, rotary
rotate-half, SwiGLU, tied LM head, N(0, 0.02) weights) at a preset's size, or
the shape --dim/--layers/--heads/--kv-heads/--ffn/--untied give (as `memo bench
train` takes them; TinyLlama-1.1B: --dim 2048 --layers 22 --heads 32 --kv-heads 4
--ffn 5632 --vocab 32000 --untied), as a torch.nn.Module and trains it on random tokens as `memo bench train` does:
--batch rows of --seq tokens per step, forward, cross-entropy, backward,
gradient clipping at 1.0 and AdamW (lr 3e-4, weight decay 0.1), 2 unmeasured
warm-up steps, then --steps measured ones. It prints the JSON fields of
`memo bench train --json` that mean the same (tokens_per_s, step_s,
first_loss, last_loss). --autocast bf16 runs the forward under
torch.autocast(bfloat16) and --fused uses AdamW(fused=True) on a GPU: the loop a
researcher would run, and the bar memo's bf16 path is measured against.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

# dim, layers, heads: model/config.go's presets.
PRESETS = {"nano": (64, 2, 4), "tiny": (128, 2, 4), "small": (256, 4, 8), "medium": (512, 6, 8), "base": (768, 12, 12)}


def ffn_size(dim):
    """model.DefaultFFN: 8d/3 rounded up to a multiple of 8."""
    return ((8 * dim + 2) // 3 + 7) // 8 * 8


class RMSNorm(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-5).to(x.dtype) * self.w


class Block(torch.nn.Module):
    def __init__(self, dim, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv, self.hd = heads, kv_heads, dim // heads
        self.n1, self.n2 = RMSNorm(dim), RMSNorm(dim)
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)
        kvd = kv_heads * self.hd
        self.q, self.k, self.v, self.o = lin(dim, dim), lin(dim, kvd), lin(dim, kvd), lin(dim, dim)
        self.gate, self.up, self.down = lin(dim, ffn), lin(dim, ffn), lin(ffn, dim)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k, v = (m(h).view(b, t, self.kv, self.hd).transpose(1, 2) for m in (self.k, self.v))
        if self.kv < self.heads:  # grouped-query attention, as transformers' repeat_kv
            k, v = (z.repeat_interleave(self.heads // self.kv, dim=1) for z in (k, v))
        rot = lambda z: z * cos + torch.cat([-z[..., self.hd // 2:], z[..., :self.hd // 2]], -1) * sin
        a = F.scaled_dot_product_attention(rot(q), rot(k), v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, -1))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(torch.nn.Module):
    def __init__(self, vocab, dim, layers, heads, kv_heads, ffn, untied, seq):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList(Block(dim, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(dim)
        self.head = torch.nn.Linear(dim, vocab, bias=False) if untied else None
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)
        hd = dim // heads
        inv = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        ang = torch.arange(seq, dtype=torch.float64)[:, None] * inv[None, :]
        self.register_buffer("cos", torch.cat([ang.cos(), ang.cos()], -1).float())
        self.register_buffer("sin", torch.cat([ang.sin(), ang.sin()], -1).float())

    def forward(self, ids):
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin)
        return F.linear(self.norm(x), self.head.weight if self.head is not None else self.embed.weight)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small", choices=sorted(PRESETS))
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--dim", type=int, default=0, help="model width (with --layers, --heads) instead of --preset")
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--heads", type=int, default=0)
    ap.add_argument("--kv-heads", type=int, default=0, help="0: --heads")
    ap.add_argument("--ffn", type=int, default=0, help="0: 8d/3 rounded up to a multiple of 8")
    ap.add_argument("--untied", action="store_true")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none")
    ap.add_argument("--fused", action="store_true", help="AdamW(fused=True) (CUDA)")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    dim, layers, heads = (a.dim, a.layers, a.heads) if a.dim else PRESETS[a.preset]
    m = Model(a.vocab, dim, layers, heads, a.kv_heads or heads, a.ffn or ffn_size(dim), a.untied, a.seq).to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.1, fused=a.fused or None)
    gen = torch.Generator().manual_seed(a.seed)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    losses, total = [], 0.0
    for step in range(2 + a.steps):
        ids = torch.randint(a.vocab, (a.batch, a.seq + 1), generator=gen).to(dev)
        sync()
        t0 = time.perf_counter()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
            logits = m(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, a.vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())  # synchronizes, as memo's loss read does
        if step >= 2:
            total += time.perf_counter() - t0
    params = sum(p.numel() for p in m.parameters())
    print(json.dumps({"preset": "custom" if a.dim else a.preset, "params": params, "vocab": a.vocab, "seq": a.seq, "batch": a.batch,
                      "steps": a.steps, "device": str(dev), "autocast": a.autocast, "fused": a.fused,
                      "threads": torch.get_num_threads(), "tokens_per_s": a.batch * a.seq * a.steps / total,
                      "step_s": total / a.steps, "first_loss": losses[0], "last_loss": losses[-1]}))


if __name__ == "__main__":
    main()
