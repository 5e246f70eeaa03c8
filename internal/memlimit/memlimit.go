// Package memlimit checks sizes a user gave (a model's dimensions in a
// spec, a flag or a Hugging Face config.json) against the machine before
// anything is allocated: past the machine's memory, Go dies with a fatal
// "out of memory" and a goroutine dump that no error handling can catch,
// and libtorch with a C++ trace.
package memlimit

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

// Total is the memory this process may use, in bytes: the smaller of the
// machine's MemTotal and the cgroup's limit; 0 when neither is known.
func Total() int64 {
	total := int64(0)
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var kb int64
			if n, _ := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); n == 1 {
				total = kb * 1024
				break
			}
		}
		f.Close()
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// Floor is a lower bound on the bytes a model of config c takes:
// perParam bytes per parameter (4 for float32 weights, 16 for training's
// weights, gradients and two AdamW moments) plus the rotary tables over
// its context. It is computed in float64, so absurd sizes stay absurd
// rather than wrapping around.
func Floor(c model.Config, perParam float64) float64 {
	v, d, f, l := float64(c.Vocab), float64(c.Dim), float64(c.FFN), float64(c.Layers)
	hd := float64(c.HeadDim)
	if hd == 0 && c.Heads > 0 {
		hd = d / float64(c.Heads)
	}
	q, kv := float64(c.Heads)*hd, float64(max(c.KVHeads, 1))*hd
	if c.KVHeads == 0 {
		kv = q
	}
	// The weight matrices only (no norms, no biases): a floor, as named.
	// A gated MLP's third matrix counts: without it a 7B Llama's float32
	// weights came to 21 GB, under a 24 GB machine's memory, and `memo
	// score` was killed for memory at 27 GB instead of refused.
	params := v*d + l*(d*(q+2*kv)+q*d+float64(c.MLPMatrices())*d*f)
	if c.Untied {
		params += v * d
	}
	return perParam*params + 4*float64(c.Context)*hd
}

// PassFloor is a lower bound on the bytes one forward pass of batch rows of
// seq positions adds to a model of config c: the float32 causal mask, made
// on the host and copied into a tensor (8·seq² bytes), and the float32
// logits of every position (4·batch·seq·vocab). At seq = 100,000 the mask
// alone is 80 GB, which Go's allocator dies of rather than refuses.
func PassFloor(c model.Config, batch, seq int) float64 {
	t := float64(seq)
	return 8*t*t + 4*float64(batch)*t*float64(c.Vocab)
}

// CheckPass is Check for a model of config c together with one pass of
// batch rows of seq positions through it (PassFloor); what names the
// flags or keys that set them.
func CheckPass(what string, c model.Config, perParam float64, batch, seq int) error {
	total := Total()
	if total == 0 {
		return nil
	}
	need := Floor(c, perParam) + PassFloor(c, batch, seq)
	if need <= float64(total) && !math.IsInf(need, 0) && !math.IsNaN(need) {
		return nil
	}
	return badinput.Errorf("%s: a model of %s with a pass over %d × %d positions (rows × length) needs at least %s; this machine has %s", what, sizes(c), batch, seq, gib(need), gib(float64(total)))
}

// Check refuses, as bad input, a model of config c that needs more than
// the machine has; what names it in the message (a file, a flag).
func Check(what string, c model.Config, perParam float64) error {
	return check(what, c, perParam, Total(), "this machine")
}

// CheckOn is Check for a model loaded onto dev: on a GPU against the GPU's
// memory (where the weights go; a load holds one tensor at a time on the
// host), elsewhere, or when CUDA cannot tell, against the machine's.
func CheckOn(what string, c model.Config, perParam float64, dev gotch.Device) error {
	if dev.IsCuda() {
		if total := torchx.GPUMemory(dev.Value); total > 0 {
			return check(what, c, perParam, total, torchx.DeviceName(dev))
		}
	}
	return Check(what, c, perParam)
}

func check(what string, c model.Config, perParam float64, total int64, where string) error {
	if total == 0 {
		return nil
	}
	need := Floor(c, perParam)
	if need <= float64(total) && !math.IsInf(need, 0) && !math.IsNaN(need) {
		return nil
	}
	return badinput.Errorf("%s: a model of %s needs at least %s; %s has %s", what, sizes(c), gib(need), where, gib(float64(total)))
}

// sizes names the dimensions that make a model large.
func sizes(c model.Config) string {
	return fmt.Sprintf("vocab %d, dim %d, layers %d, ffn %d, context %d", c.Vocab, c.Dim, c.Layers, c.FFN, c.Context)
}

func gib(b float64) string {
	if b >= 1<<50 {
		return fmt.Sprintf("%.3g TiB", b/(1<<40))
	}
	return fmt.Sprintf("%.1f GiB", b/(1<<30))
}
