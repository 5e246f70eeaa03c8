package extract

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
)

// maxAutoBatch caps the automatic batch on the CPU: past it decoding is no
// faster there, and a bigger batch only pads more. maxAutoBatchGPU caps it
// on a GPU, whose products keep speeding up with rows well past 64 (an
// H200 decoded 4,000 prompts of a 1.1B model at 250 a batch in 39 s).
const (
	maxAutoBatch    = 64
	maxAutoBatchGPU = 512
)

// AutoBatch is the batch size used when extract.batch_size = 0. A row of a
// batch holds, in float32, the key/value cache of every layer over the
// window (2·layers·dim per token) and the logits of a scoring pass (vocab
// per token): rowBytes = 4·window·(2·layers·dim + vocab). A quarter of the
// memory left after the model's weights (weightBytes: model.GPT.WeightBytes,
// about half in bf16) goes to the batch, so activations and libtorch's
// allocator have room; the result is clamped to [1, maxBatch].
func AutoBatch(mc model.Config, weightBytes int64, window int, availBytes int64, maxBatch int) int {
	row := 4 * int64(window) * (2*int64(mc.Layers)*int64(mc.Dim) + int64(mc.Vocab))
	budget := (availBytes - weightBytes) / 4
	if row <= 0 || budget <= row {
		return 1
	}
	return int(min(budget/row, int64(maxBatch)))
}

// batchMemory is the memory AutoBatch shares out on dev and the batch it
// caps at: on a GPU the GPU's memory, on the CPU MemAvailable.
func batchMemory(dev gotch.Device) (availBytes int64, maxBatch int) {
	if dev.IsCuda() {
		if total := torchx.GPUMemory(dev.Value); total > 0 {
			return total, maxAutoBatchGPU
		}
	}
	return availableMemory(), maxAutoBatch
}

// availableMemory is MemAvailable of /proc/meminfo in bytes; 1 GiB when it
// cannot be read (not Linux), a conservative guess.
func availableMemory() int64 {
	const fallback = 1 << 30
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fallback
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return fallback
			}
			return kb << 10
		}
	}
	return fallback
}
