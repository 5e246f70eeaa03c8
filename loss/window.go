package loss

// keyDecider turns a window's product key into a drop decision. Value types
// with different layouts get their own instantiation of maskProducts, so the
// call is direct and inlined.
type keyDecider interface {
	decide(key int64) bool
}

// maxBlock bounds the stack buffer of the block algorithm; wider windows
// take the direct loop.
const maxBlock = 64

// maskProducts sets dropped[p] = d.decide(product of targets[p-h+1..p]) for
// every p >= h-1 and false elsewhere. The products wrap like int64 tensors;
// since wrapping multiplication is associative and commutative, they are
// computed by the two-block method (suffix products of the previous block
// of h times a running prefix product of the current one): three
// multiplications per position whatever h is, and bit-identical to
// multiplying each window out.
func maskProducts[D keyDecider](targets []int32, h int, d D, dropped []bool) {
	checkLen(targets, dropped)
	out := dropped[:len(targets)]
	clear(out)
	n := len(targets)
	if h > maxBlock {
		for p := h - 1; p < n; p++ {
			key := int64(1)
			for _, t := range targets[p-h+1 : p+1] {
				key *= int64(t)
			}
			out[p] = d.decide(key)
		}
		return
	}
	// suf[j] = product of prev[j..h-1] for the previous block; suf[h] = 1
	// stands for the empty suffix, used when a window is exactly one block.
	var suf [maxBlock + 1]int64
	for bs := 0; bs < n; bs += h {
		be := min(bs+h, n)
		if bs > 0 {
			acc := int64(1)
			suf[h] = 1
			for j := h - 1; j >= 0; j-- {
				acc *= int64(targets[bs-h+j])
				suf[j] = acc
			}
		}
		pre := int64(1)
		for p := bs; p < be; p++ {
			pre *= int64(targets[p])
			// The window [p-h+1, p] starts at offset p-bs+1 of the
			// previous block, or is this block's prefix when that is h.
			if bs > 0 {
				out[p] = d.decide(suf[p-bs+1] * pre)
			} else if p == h-1 {
				out[p] = d.decide(pre)
			}
		}
	}
}
