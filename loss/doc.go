// Package loss implements the goldfish loss (Hans et al. 2024, arXiv
// 2406.10209): each row's targets (row[1:L+1]) are masked by a Masker and
// the cross-entropy is averaged over the targets that are kept.
//
// # Strategies
//
// The first four reproduce the reference code (github.com/ahans30/goldfish-loss,
// lit_gpt/utils.py, apply_goldfish) decision for decision as it runs on
// the CPU; the golden test pins hash-table and static to masks PyTorch
// 1.13 computed there. The reference builds its hash table on the
// training device (torch.rand with a generator on targets.device): on a
// GPU that is Philox, not MT19937, and its table, so the positions it
// drops, differ from these (same rule, seed and rate).
//
//   - none: the standard loss; k = 0 with any strategy means the same.
//   - static: drops positions start, start+k, start+2k, ... of the row.
//   - hash-table (the paper's): for p >= h-1 the key is the wrapping int64
//     product of targets[p-h+1 .. p], the window ending at the target
//     itself; index = key mod 1,000,003 taken non-negative; p is dropped when
//     Table()[index] < float32(1/k). Table() is torch.rand(1_000_003) from a
//     CPU generator seeded 2971215073, rebuilt here with MT19937.
//   - hash-avalanche: the same product, reinterpreted as uint64, through the
//     reference's hashint(width=32) (WangHash32), dropped when the hash is
//     below (2^32-1)/k. The reference's hashint is Thomas Wang's 64-bit
//     shift-add mix with 32-bit masks, not his 32-bit hash; its first step
//     keeps only 32 bits, so only the low 32 bits of the product matter. The
//     comparison is made in float32, as PyTorch compares an int64 tensor with
//     a Python float.
//   - random (ours): each target dropped independently with probability
//     1/k from a counter-based generator keyed by (seed, row, position),
//     where row is the row's global position in the training stream
//     (RowMasker.MaskRow, which MaskBatch calls), so a resumed run masks
//     as an uninterrupted one. A repeated document gets a fresh mask each
//     time it is seen, the point of a random baseline. The reference's seeded_random indexes whole
//     rows with its 0/1 mask instead of positions, so it is not reproduced.
//   - rolling (ours): p is dropped when a keyed, order-sensitive polynomial
//     hash of the h targets before it, targets[p-h .. p-1] (the paper's
//     f(x_{i-h}, ..., x_{i-1})), falls below 2^64/k; positions p < h are
//     kept, and targets whose id is in ExemptIDs (EOS, padding) are never
//     dropped.
//
// # The product hash's quirks, and what rolling changes
//
// The reference's product key, kept as is for compatibility, ignores token
// order (any permutation of a window gets the same decision); token 1 is
// invisible (it does not change the product); and any window holding token
// 0 has key 0, whose table value 0.2337 means "drop" for k <= 4, so at the
// paper's k = 4 the h targets from a token 0 onwards are all dropped. The product
// also includes the target, so the decision for p depends on the token
// being predicted. rolling hashes an order-sensitive function of the
// preceding tokens only: every token weighs in, each through a non-zero
// 64-bit value, and a per-seed key varies masks across seeds.
//
// # Speed
//
// Masks are computed on the CPU, per row, without allocating. The window
// products are formed in three multiplications per position by the
// two-block method (exact, since wrapping multiplication is associative),
// and hash-table looks its decision up in a 125 KB bitset of the table
// built once per k.
//
// The package is pure Go: the masked cross-entropy on libtorch tensors is
// train.MaskedCrossEntropy, so that eval, plots and memo mask, which need
// the masks and the config, build without libtorch.
package loss
