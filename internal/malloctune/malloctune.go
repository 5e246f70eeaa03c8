// Package malloctune restarts the process with glibc allocator settings that
// keep libtorch's large activation buffers on the heap.
//
// libtorch asks malloc for a fresh buffer for every activation and gradient of
// every step. Above glibc's mmap threshold (at most 32 MiB when adjusted
// dynamically) each of those is a new mmap that the kernel zero-fills page by
// page on first touch and unmaps again on free, so a CPU training step spends
// much of its time in page faults. Measured on the 2-core development machine
// with `memo bench train --preset small --vocab 4096 --seq 256 --batch 16
// --threads 2`: MFU 0.34 with glibc's defaults, 0.60 with these settings.
//
// The tunables are read by the dynamic loader before main runs, so they can only
// take effect through the environment of a new process image: Apply re-executes
// the running binary once with GLIBC_TUNABLES extended. Child processes (sweep
// points, distributed ranks) inherit the variable and are not restarted again.
package malloctune

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Tunables never lets large blocks go to mmap, and keeps up to 16 GiB of freed
// memory and 1 GiB of padding at the top of the heap instead of trimming it.
// The cost is that RSS stays at its peak for the life of the process.
const Tunables = "glibc.malloc.mmap_threshold=4294967296:" +
	"glibc.malloc.trim_threshold=17179869184:" +
	"glibc.malloc.top_pad=1073741824"

// OptOutEnv, set to any non-empty value, keeps glibc's default allocator settings.
const OptOutEnv = "MEMO_DEFAULT_MALLOC"

// appliedEnv marks a process that was restarted with Tunables and holds
// the full GLIBC_TUNABLES value it was restarted with. It is needed because
// the dynamic loader cuts GLIBC_TUNABLES short in the environment it hands on
// (seen with glibc 2.36: only the first setting is left), so the variable
// alone cannot tell whether the settings are in effect, and children would
// inherit the shortened value.
const appliedEnv = "MEMO_MALLOC_TUNED"

// Environment returns env with Tunables added to GLIBC_TUNABLES, and whether
// the process must restart for them to take effect: it need not when it
// already was restarted (then the variable is only restored to the value it
// was restarted with, for children), when the user set a malloc threshold of
// their own, or opted out.
func Environment(env []string) ([]string, bool) {
	cur, idx, applied := "", -1, ""
	for i, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case OptOutEnv:
			if value != "" {
				return env, false
			}
		case appliedEnv:
			applied = value
		case "GLIBC_TUNABLES":
			cur, idx = value, i
		}
	}
	if applied == "" && strings.Contains(cur, "glibc.malloc.mmap_threshold=") {
		return env, false
	}
	value := applied
	if applied == "" {
		value = Tunables
		if cur != "" {
			value = cur + ":" + Tunables
		}
	}
	out := append([]string(nil), env...)
	if idx >= 0 {
		out[idx] = "GLIBC_TUNABLES=" + value
	} else {
		out = append(out, "GLIBC_TUNABLES="+value)
	}
	if applied == "" {
		out = append(out, appliedEnv+"="+value)
	}
	return out, applied == ""
}

// Apply re-executes the running binary with Tunables in its environment and
// does not return when that succeeds. In a process that already was restarted
// it only restores the full GLIBC_TUNABLES value for child processes. It
// returns an error when the restart itself failed, in which case the caller can
// go on with the default settings.
func Apply() error {
	env, restart := Environment(os.Environ())
	if !restart {
		for _, kv := range env {
			if name, value, _ := strings.Cut(kv, "="); name == "GLIBC_TUNABLES" {
				os.Setenv(name, value)
			}
		}
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("malloc tunables: find own executable: %w", err)
	}
	if err := syscall.Exec(exe, os.Args, env); err != nil {
		return fmt.Errorf("malloc tunables: re-exec %s: %w", exe, err)
	}
	return nil
}
