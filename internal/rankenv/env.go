// Package rankenv reads where this process sits in a multi-process launch
// (rank, world size, local rank, rendezvous address) from explicit values,
// torchrun's environment or Slurm's. It is pure Go and the one reading of
// that environment: dist joins its process group with it, and experiments
// decides with it which process keeps a run's books, without linking
// libtorch.
package rankenv

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Config says where this process sits in the group. Zero fields are filled
// by Discover from the environment.
type Config struct {
	Rank      int    // -1: not set
	Size      int    // 0: not set
	LocalRank int    // -1: not set
	Addr      string // rendezvous host (rank 0's TCPStore)
	Port      int
	// Timeout bounds the rendezvous and every collective, so a stuck peer
	// gives an error instead of a hang. 0 means DefaultTimeout.
	Timeout time.Duration
	// DeadAfter ends a collective (Gloo) as soon as a peer's heartbeat, or
	// rank 0's store, has been silent this long: a stopped or hung machine
	// keeps its sockets open, so without it the peers would wait out
	// Timeout. 0 means DefaultDeadAfter; negative waits out Timeout.
	DeadAfter time.Duration
	// Backend is "gloo" (default) or "nccl" (CUDA builds only).
	Backend string
	// Iface names the network interface Gloo binds to; default:
	// $GLOO_SOCKET_IFNAME, else loopback for a loopback address, else the
	// interface of this host's name.
	Iface string
	// Source says where the values came from (set by Discover): "flags",
	// "torchrun", "slurm" (a task of an srun step) or "single".
	Source string
	// PortSet: Port was given (a flag or MASTER_PORT), not DefaultPort.
	PortSet bool
}

// DefaultTimeout bounds collectives when Config.Timeout is 0. A killed
// rank's peers fail at once (its sockets close); a silent one is found by
// DefaultDeadAfter; this bounds a rank that lives but never arrives.
const DefaultTimeout = 60 * time.Second

// DefaultDeadAfter is Config.DeadAfter's default: heartbeats come every
// second, so 20 s of silence is no scheduling hiccup, and a dead rank is
// named within about 21 s, well inside the 60 s promised.
const DefaultDeadAfter = 20 * time.Second

// DefaultPort is torchrun's default MASTER_PORT.
const DefaultPort = 29500

// Unset returns a Config with nothing set: Discover fills it all.
func Unset() Config { return Config{Rank: -1, LocalRank: -1} }

// Discover completes c in this order: the explicit fields already set, then
// torchrun's RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT, then Slurm's
// SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID of a task srun started (one with
// SLURM_STEP_ID) with the first host of SLURM_JOB_NODELIST as the address;
// with none of them, a single process. PortSet says whether the port was
// given (flag or MASTER_PORT) or is DefaultPort.
func Discover(c Config) (Config, error) {
	return discover(c, os.LookupEnv)
}

func discover(c Config, env func(string) (string, bool)) (Config, error) {
	explicit := c.Rank >= 0 || c.Size > 0
	var src string
	switch {
	case explicit:
		src = "flags"
	case has(env, "RANK") || has(env, "WORLD_SIZE"):
		src = "torchrun"
	case has(env, "SLURM_PROCID") && (has(env, "SLURM_STEP_ID") || has(env, "SLURM_STEPID")):
		// A task srun started. A batch script's shell has SLURM_PROCID=0
		// and the allocation's SLURM_NTASKS too, but no step: it is one
		// process (whose `memo run --nproc N` starts its own ranks).
		src = "slurm"
	default:
		src = "single"
	}
	get := func(keys ...string) (int, string, bool, error) {
		for _, k := range keys {
			if v, ok := env(k); ok && v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					return 0, k, true, fmt.Errorf("environment %s=%q: not an integer", k, v)
				}
				return n, k, true, nil
			}
		}
		return 0, "", false, nil
	}
	var names map[string][]string
	switch src {
	case "torchrun", "flags":
		names = map[string][]string{"rank": {"RANK"}, "size": {"WORLD_SIZE"}, "local": {"LOCAL_RANK"}}
	case "slurm":
		names = map[string][]string{"rank": {"SLURM_PROCID"}, "size": {"SLURM_NTASKS", "SLURM_NPROCS"}, "local": {"SLURM_LOCALID"}}
	}
	fill := func(dst *int, unset int, key string) error {
		if *dst != unset || names == nil {
			return nil
		}
		n, _, ok, err := get(names[key]...)
		if err != nil {
			return err
		}
		if ok {
			*dst = n
		}
		return nil
	}
	if err := fill(&c.Rank, -1, "rank"); err != nil {
		return c, err
	}
	if err := fill(&c.Size, 0, "size"); err != nil {
		return c, err
	}
	if err := fill(&c.LocalRank, -1, "local"); err != nil {
		return c, err
	}
	if c.Rank < 0 {
		c.Rank = 0
	}
	if c.Size == 0 {
		c.Size = 1
	}
	if c.LocalRank < 0 {
		c.LocalRank = c.Rank
		if src == "slurm" {
			c.LocalRank = 0
		}
	}
	if c.Addr == "" {
		if v, ok := env("MASTER_ADDR"); ok && v != "" {
			c.Addr = v
		} else if v, ok := env("SLURM_JOB_NODELIST"); ok && src == "slurm" && v != "" {
			h, err := FirstHost(v)
			if err != nil {
				return c, fmt.Errorf("environment SLURM_JOB_NODELIST: %w", err)
			}
			c.Addr = h
		} else {
			c.Addr = "127.0.0.1"
		}
	}
	if c.Port == 0 {
		n, _, ok, err := get("MASTER_PORT")
		if err != nil {
			return c, err
		}
		c.Port = DefaultPort
		if ok {
			c.Port, c.PortSet = n, true
		}
	} else {
		c.PortSet = true
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.DeadAfter == 0 {
		c.DeadAfter = DefaultDeadAfter
	}
	if c.Backend == "" {
		c.Backend = "gloo"
	}
	if c.Iface == "" {
		c.Iface, _ = env("GLOO_SOCKET_IFNAME")
	}
	c.Source = src
	return c, c.validate()
}

func has(env func(string) (string, bool), k string) bool {
	v, ok := env(k)
	return ok && v != ""
}

func (c Config) validate() error {
	switch {
	case c.Size < 1:
		return fmt.Errorf("world size %d (from %s): must be >= 1", c.Size, c.Source)
	case c.Rank < 0 || c.Rank >= c.Size:
		return fmt.Errorf("rank %d (from %s): must be in [0, %d) for world size %d", c.Rank, c.Source, c.Size, c.Size)
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("rendezvous port %d (MASTER_PORT or --master-port): must be in 1..65535", c.Port)
	case c.Backend != "gloo" && c.Backend != "nccl":
		return fmt.Errorf("backend %q: must be gloo or nccl", c.Backend)
	case c.Timeout < 0:
		return fmt.Errorf("timeout %v: must be positive", c.Timeout)
	}
	return nil
}
