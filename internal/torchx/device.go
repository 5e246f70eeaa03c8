package torchx

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sugarme/gotch"
)

// Device names in memo are train.device values ("cpu", "cuda", "cuda:N");
// the errors below name that key because it is the one a user sets, for
// training and for loading a checkpoint alike.

// ParseDevice reads a device name: "cpu" (or empty), "cuda" (the first
// GPU) or "cuda:N", in any case. It checks the spelling only.
func ParseDevice(name string) (cuda bool, index int, err error) {
	s := strings.ToLower(strings.TrimSpace(name))
	switch {
	case s == "" || s == "cpu":
		return false, 0, nil
	case s == "cuda":
		return true, 0, nil
	case strings.HasPrefix(s, "cuda:"):
		n, err := strconv.Atoi(s[len("cuda:"):])
		if err != nil || n < 0 {
			return false, 0, errors.New(`want "cpu", "cuda" or "cuda:N" with N a GPU index >= 0`)
		}
		return true, n, nil
	}
	return false, 0, errors.New(`want "cpu", "cuda" or "cuda:N"`)
}

// DeviceName spells d as train.device and extract.device do ("cpu",
// "cuda:N"): the name ResolveDevice turns back into d.
func DeviceName(d gotch.Device) string {
	if d.IsCuda() {
		return fmt.Sprintf("cuda:%d", d.Value)
	}
	return "cpu"
}

// ResolveDevice turns a device name into the device to compute on. A CUDA
// device fails with a clear error unless this process's libtorch was built
// with CUDA and sees a GPU of that index. Errors name train.device.
func ResolveDevice(name string) (gotch.Device, error) {
	return ResolveDeviceFor("train.device", name)
}

// ResolveDeviceFor is ResolveDevice with errors naming key, the spec key
// or flag the name came from ("extract.device", "--device").
func ResolveDeviceFor(key, name string) (gotch.Device, error) {
	// A flag reads as typed (--device "cuda:x"), a spec key as in the TOML.
	sep := " = "
	if strings.HasPrefix(key, "-") {
		sep = " "
	}
	key += sep
	cuda, index, err := ParseDevice(name)
	if err != nil {
		return gotch.CPU, fmt.Errorf("%s%q: %w", key, name, err)
	}
	if !cuda {
		return gotch.CPU, nil
	}
	if !gotch.CUDA.IsAvailable() {
		return gotch.CPU, fmt.Errorf("%s%q: CUDA is not available to this libtorch (a CPU-only build, or no GPU visible to the process); "+
			"use \"cpu\", or build memo against a CUDA libtorch (LIBTORCH=python or LIBTORCH=/path/to/libtorch bash scripts/setup.sh; docs/GPU.md, \"PyTorch, CUDA and devices\")", key, name)
	}
	if n := gotch.CUDA.DeviceCount(); int64(index) >= n {
		return gotch.CPU, fmt.Errorf("%s%q: libtorch sees %d GPU(s), cuda:0 to cuda:%d", key, name, n, n-1)
	}
	return gotch.CudaBuilder(uint(index)), nil
}
