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

Stronger peers for issue 41: --master holds the model's weights in bf16 and
keeps float32 master copies in the optimizer (no per-pass weight casts; the
bf16 gradients are widened into the masters' .grad, clipped there, fused AdamW
steps the masters, and the bf16 weights are copied back from them); --compile
runs the model under torch.compile (its first steps compile: --warmup covers
them and compile_s reports the time). On CUDA each measured step is timed with
CUDA events too (step_ms_median, step_ms_min, step_ms_max). --profile N prints
the N most expensive CUDA kernels of 3 extra steps to stderr
(torch.profiler). flops_per_token is 6N + 12·L·s·d (N: every weight but the
input embedding), and mfu divides by --peak-tflops when given.

--blocks N measures N blocks of --steps after one warm-up, one JSON line each;
with --go FILE (a FIFO) the process prints {"ready": ...} once warm and reads a
line from FILE before each block, so that it alternates with another program
while it stays compiled (scripts/gpu/mfu.sh's compilepairs: each pair's peer
does not compile again).
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
        # Rotary positions promote q and k to float32; attention runs in v's dtype
        # (autocast would cast them to bf16 the same way).
        a = F.scaled_dot_product_attention(rot(q).to(v.dtype), rot(k).to(v.dtype), v, is_causal=True)
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
    ap.add_argument("--master", action="store_true", help="bf16 weights, float32 master copies in the optimizer")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured steps first")
    ap.add_argument("--profile", type=int, default=0, help="print this many top CUDA kernels of 3 extra steps")
    ap.add_argument("--peak-tflops", type=float, default=0, help="the card's dense peak, for mfu")
    ap.add_argument("--blocks", type=int, default=1, help="measure this many blocks of --steps, one JSON line each")
    ap.add_argument("--go", default="", help="a FIFO: print a ready line once warm, then read a line from it before each block")
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    dim, layers, heads = (a.dim, a.layers, a.heads) if a.dim else PRESETS[a.preset]
    m = Model(a.vocab, dim, layers, heads, a.kv_heads or heads, a.ffn or ffn_size(dim), a.untied, a.seq).to(dev)
    weights = list(m.parameters())
    if a.master:
        masters = [p.detach().float().clone() for p in weights]
        cos, sin = m.cos, m.sin
        m = m.to(torch.bfloat16)
        m.cos, m.sin = cos, sin  # rotary tables stay float32, as autocast leaves them
        weights = list(m.parameters())
        for q in masters:
            q.requires_grad_(True)
        opt = torch.optim.AdamW(masters, lr=3e-4, weight_decay=0.1, fused=a.fused or None)
    else:
        opt = torch.optim.AdamW(weights, lr=3e-4, weight_decay=0.1, fused=a.fused or None)
    fwd = torch.compile(m) if a.compile else m
    gen = torch.Generator().manual_seed(a.seed)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step():
        ids = torch.randint(a.vocab, (a.batch, a.seq + 1), generator=gen).to(dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.autocast == "bf16" and not a.master):
            logits = fwd(ids[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, a.vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        if a.master:
            for q, p in zip(masters, weights):
                q.grad = p.grad.float()
                p.grad = None
            torch.nn.utils.clip_grad_norm_(masters, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            with torch.no_grad():
                torch._foreach_copy_(weights, masters)
        else:
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
        return loss.item()  # synchronizes, as memo's loss read does

    losses = []
    t_compile = time.perf_counter()
    for _ in range(a.warmup):
        losses.append(step())
    t_compile = time.perf_counter() - t_compile
    go = None
    if a.go:
        print(json.dumps({"ready": True, "compile_s": t_compile}), flush=True)
        go = open(a.go)
    for _ in range(a.blocks):
        if go is not None and not go.readline():
            break  # the other side closed the FIFO: no more blocks
        measure(a, step, losses, t_compile, m, dev, dim, layers, sync, cuda)


def measure(a, step, losses, t_compile, m, dev, dim, layers, sync, cuda):
    """One block of a.steps measured steps; prints its JSON line."""
    total, events = 0.0, []
    first = len(losses)
    if cuda and a.blocks > 1:
        torch.cuda.reset_peak_memory_stats(dev)  # each block's own peak
    for _ in range(a.steps):
        sync()
        t0 = time.perf_counter()
        if cuda:
            ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            ev[0].record()
        losses.append(step())
        if cuda:
            ev[1].record()
            events.append(ev)
        total += time.perf_counter() - t0
    if a.profile and cuda:
        import sys
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                step()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=a.profile), file=sys.stderr)
    sync()
    ms = sorted(e0.elapsed_time(e1) for e0, e1 in events)
    params = sum(p.numel() for p in m.parameters())
    n_flop = params - a.vocab * dim  # the input embedding is a lookup
    flops_per_token = 6 * n_flop + 12 * layers * a.seq * dim
    out = {"preset": "custom" if a.dim else a.preset, "params": params, "vocab": a.vocab, "seq": a.seq, "batch": a.batch,
           "steps": a.steps, "device": str(dev), "autocast": a.autocast, "fused": a.fused, "master": a.master,
           "compile": a.compile, "threads": torch.get_num_threads(), "tokens_per_s": a.batch * a.seq * a.steps / total,
           "step_s": total / a.steps, "first_loss": losses[0], "last_loss": losses[-1],
           "block_first_loss": losses[first], "flops_per_token": flops_per_token}
    if cuda:
        out["gpu"] = torch.cuda.get_device_name(dev)
        out["peak_memory_bytes"] = torch.cuda.max_memory_allocated(dev)
    if ms:
        out.update(step_ms_median=ms[len(ms) // 2], step_ms_min=ms[0], step_ms_max=ms[-1])
    if a.compile:
        out["compile_s"] = t_compile
    if a.peak_tflops > 0:
        out["mfu"] = out["tokens_per_s"] * flops_per_token / (a.peak_tflops * 1e12)
    print(json.dumps(out), flush=True)

if __name__ == "__main__":
    main()
