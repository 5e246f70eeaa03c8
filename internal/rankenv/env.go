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
	"strings"
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

// DefaultTimeout bounds the process group's rendezvous and collectives
// when Config.Timeout is 0 and MEMO_DIST_TIMEOUT is unset: PyTorch's
// default for Gloo, 30 minutes. A killed rank's peers fail at once (its
// sockets close) and a silent one is found by DefaultDeadAfter, so this
// bounds only a rank that lives, beats, and never arrives — which rank 0
// does, legitimately, while it alone writes or verifies a checkpoint: a
// 1.1B model's 12.6 GB takes about a minute, and a 60 s bound failed the
// other ranks at every save ("a peer stopped responding").
const DefaultTimeout = 30 * time.Minute

// TimeoutEnv overrides DefaultTimeout (a Go duration: 90s, 45m, 2h).
const TimeoutEnv = "MEMO_DIST_TIMEOUT"

// MeetTimeout bounds memo's start-up meeting of a launch's ranks
// (Lead, Follow): how long a rank looks for rank 0, and rank 0 for the
// others, before the process group exists.
const MeetTimeout = 60 * time.Second

// DefaultDeadAfter is Config.DeadAfter's default: heartbeats come every
// second, so 20 s of silence is no scheduling hiccup, and a dead rank is
// named within about 21 s.
const DefaultDeadAfter = 20 * time.Second

// DefaultPort is torchrun's default MASTER_PORT.
const DefaultPort = 29500

// Unset returns a Config with nothing set: Discover fills it all.
func Unset() Config { return Config{Rank: -1, LocalRank: -1} }

// Discover completes c in this order: the explicit fields already set, then
// torchrun's RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT, then Slurm's
// SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID of a task srun started (one with
// SLURM_STEP_ID) with the first host of the step's node list as the address;
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
	case has(env, "RANK") != has(env, "WORLD_SIZE"):
		// A Slurm script's export WORLD_SIZE=$SLURM_NTASKS made every
		// task rank 0 of a group that never met.
		set, unset := "RANK", "WORLD_SIZE"
		if has(env, "WORLD_SIZE") {
			set, unset = unset, set
		}
		v, _ := env(set)
		return c, fmt.Errorf("environment %s=%s without %s: torchrun sets both; set %s too, or unset %s (under srun, SLURM_PROCID and SLURM_NTASKS are read then)", set, v, unset, unset, set)
	case has(env, "RANK") && has(env, "WORLD_SIZE"):
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
		} else if k, v := slurmNodes(env); src == "slurm" && v != "" {
			h, err := FirstHost(v)
			if err != nil {
				return c, fmt.Errorf("environment %s: %w", k, err)
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
		if src == "slurm" || src == "torchrun" {
			// The meeting's first candidate: two jobs on a node no
			// longer both start from 29500.
			c.Port = derivedPort(env)
		}
		// torchrun's agent (PyTorch 2.x) serves its own store on
		// MASTER_PORT and tells its workers so: memo's store would find
		// the port taken, so its ranks meet on a port of their own.
		if ok && !(src == "torchrun" && agentStore(env)) {
			c.Port, c.PortSet = n, true
		}
	} else {
		c.PortSet = true
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
		if v, ok := env(TimeoutEnv); ok && v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("environment %s=%q: want a positive duration such as 90s, 45m or 2h", TimeoutEnv, v)
			}
			c.Timeout = d
		}
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

// AgentStoreEnv is set to True by torchrun's agent when it serves a
// TCPStore on MASTER_PORT for its workers (use_agent_store, PyTorch 2.x).
const AgentStoreEnv = "TORCHELASTIC_USE_AGENT_STORE"

func agentStore(env func(string) (string, bool)) bool {
	v, _ := env(AgentStoreEnv)
	return strings.EqualFold(v, "true") || v == "1"
}

// UseMeetingPort makes the port a launch's ranks met on the process
// group's: MASTER_PORT, which Discover then reads even under torchrun's
// agent store (the flag saying MASTER_PORT is the agent's is cleared).
func UseMeetingPort(port int) error {
	if err := os.Unsetenv(AgentStoreEnv); err != nil {
		return err
	}
	return os.Setenv("MASTER_PORT", strconv.Itoa(port))
}

// slurmNodes is the node list rank 0 runs on: the step's (a step on some
// of the allocation's nodes, srun -r or -w, starts its task 0 on its own
// first node, not the job's), else the job's. It names the variable.
func slurmNodes(env func(string) (string, bool)) (key, list string) {
	for _, k := range []string{"SLURM_STEP_NODELIST", "SLURM_NODELIST", "SLURM_JOB_NODELIST"} {
		if v, ok := env(k); ok && v != "" {
			return k, v
		}
	}
	return "", ""
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
