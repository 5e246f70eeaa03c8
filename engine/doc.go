// Package engine runs a model.GPT: the KV cache, decoding and the
// teacher-forced passes the attacks score with. Package model is the
// network (the recipe-driven forward pass and its weights); this package
// decides how it is run.
//
//   - Cache is a batch's keys and values (model.KVStore) and the joined
//     weights its passes reuse (model.Joins; joins.go keeps them, made by
//     GPT.JoinLayer). When it is made it picks the backend (model.Backend:
//     attention and products) of every pass once, wrapping the model's own
//     (g.Backend(): float32, or the one package precision set): that one; on
//     the CPU the decode kernels, the single-query attention
//     (torchx.AttendOne) for decode steps and the few-row product
//     (torchx.LinearRows); or an Approximation's attention (package
//     engine/approx) for a Stepper made by NewStepperUnder. The
//     teacher-forced passes pick theirs the same way (uncached).
//   - Stepper decodes a batch of left-padded prompts in lockstep, and
//     Continue is the one token loop greedy, sampling, beam search
//     (package extract), Generate and speculative decoding drive.
//   - TokenNLL, ScoreWindows, GreedyMatch and GradNorm are one
//     teacher-forced pass (or, for GradNorm, one backward pass) over
//     right-padded windows: the per-token losses, Min-K%++ moments,
//     greedy-match lengths and gradient norms of the membership and
//     extraction attacks.
//
// Like model's forward pass these run under libtorch's per-thread grad
// mode: Cache.Forward and the Stepper lock the OS thread themselves;
// GradNorm's caller must hold one thread.
package engine
