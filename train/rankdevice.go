package train

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
)

// localRanker is a Group that knows its rank's index on its machine
// (dist.Group); a Group without it is taken to be one machine.
type localRanker interface{ LocalRank() int }

// RankDevice is the device name local rank localRank of a data-parallel
// run trains on, for train.device = device on a machine whose libtorch
// sees gpus GPUs. "cuda" without an index spreads the ranks over the GPUs,
// local rank r on cuda:(r mod gpus), as torchrun's LOCAL_RANK convention
// has it; with more ranks than GPUs some share one, and shared says this
// rank is one of them (a lower local rank has the same GPU). Over Gloo
// the ranks on one GPU sum their gradients as they would on two; NCCL
// refuses two ranks on one GPU (docs/GPU.md). A named device ("cuda:N",
// "cpu") is every rank's: the user chose it.
func RankDevice(device string, localRank, gpus int) (name string, shared bool) {
	if strings.ToLower(strings.TrimSpace(device)) != "cuda" || gpus < 1 || localRank < 0 {
		return device, false
	}
	return fmt.Sprintf("cuda:%d", localRank%gpus), localRank >= gpus
}

// rankDevice resolves train.device for this process: RankDevice's choice
// when it is one rank of several, logged when it shares its GPU.
func rankDevice(device string, group Group) (gotch.Device, error) {
	if group == nil || group.Size() < 2 {
		return torchx.ResolveDevice(device)
	}
	if cuda, _, err := torchx.ParseDevice(device); err != nil || !cuda || !gotch.CUDA.IsAvailable() {
		return torchx.ResolveDevice(device) // its error, or the CPU
	}
	local := group.Rank()
	if l, ok := group.(localRanker); ok {
		local = l.LocalRank()
	}
	gpus := int(gotch.CUDA.DeviceCount())
	name, shared := RankDevice(device, local, gpus)
	if shared {
		slog.Info("train: more ranks than GPUs: this rank shares its GPU with a lower local rank (Gloo; NCCL needs a GPU per rank)",
			"rank", group.Rank(), "local_rank", local, "device", name, "gpus", gpus)
	}
	return torchx.ResolveDevice(name)
}
