package rankenv

import (
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Job is what a run records about the launch it ran under (manifest.json):
// the launcher, the world, the threads each process took and why, and the
// scheduler's job identifiers.
type Job struct {
	Launcher    string `json:"launcher"` // single, torchrun, slurm, memo (memo run --nproc), flags
	WorldSize   int    `json:"world_size"`
	LocalSize   int    `json:"local_size"` // ranks on this node
	Threads     int    `json:"threads"`
	ThreadsFrom string `json:"threads_from"`
	// StageThreads, when set, is the libtorch threads of the process
	// that ran the stages other than training (data, extract, eval) when
	// it differs from Threads: memo run --nproc's parent keeps every
	// core for them while its ranks train on a share each, so its scores
	// can differ in the last bits from srun's rank 0, which ran them on
	// its share.
	StageThreads int    `json:"stage_threads,omitempty"`
	JobID        string `json:"slurm_job_id,omitempty"`
	ArrayJobID   string `json:"slurm_array_job_id,omitempty"`
	ArrayTaskID  string `json:"slurm_array_task_id,omitempty"`
	StepID       string `json:"slurm_step_id,omitempty"`
}

// JobOf describes the launch c was discovered from, with threads the
// libtorch threads this process uses and from where that count came.
func JobOf(c Config, threads int, from string) Job {
	return jobOf(c, threads, from, os.LookupEnv)
}

func jobOf(c Config, threads int, from string, env func(string) (string, bool)) Job {
	get := func(k string) string { v, _ := env(k); return v }
	j := Job{Launcher: c.Source, WorldSize: c.Size, LocalSize: localSize(c, env), Threads: threads, ThreadsFrom: from,
		JobID: get("SLURM_JOB_ID"), ArrayJobID: get("SLURM_ARRAY_JOB_ID"), ArrayTaskID: get("SLURM_ARRAY_TASK_ID"),
		StepID: get("SLURM_STEP_ID")}
	if c.Source == "torchrun" && get("MEMO_DIST_LAUNCHED") == "1" {
		j.Launcher = "memo"
	}
	return j
}

// localSize is the number of ranks on this node: torchrun's
// LOCAL_WORLD_SIZE, or this node's entry of Slurm's tasks per node
// ("2(x3),1" means 2 on each of the first three nodes, 1 on the fourth).
func localSize(c Config, env func(string) (string, bool)) int {
	if c.Size <= 1 {
		return 1
	}
	atoi := func(k string) int {
		v, _ := env(k)
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0
		}
		return n
	}
	switch c.Source {
	case "torchrun", "flags":
		if n := atoi("LOCAL_WORLD_SIZE"); n > 0 {
			return n
		}
	case "slurm":
		for _, k := range []string{"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"} {
			if v, ok := env(k); ok {
				if n, err := TasksOnNode(v, atoi("SLURM_NODEID")); err == nil && n > 0 {
					return n
				}
			}
		}
		if n := atoi("SLURM_NTASKS_PER_NODE"); n > 0 {
			return n
		}
		if nodes := atoi("SLURM_NNODES"); nodes > 0 {
			return (c.Size + nodes - 1) / nodes
		}
	}
	return c.Size // no word on the layout: as if all ranks shared this node
}

// TasksOnNode reads node's entry of Slurm's compressed tasks-per-node list
// ("2(x3),1").
func TasksOnNode(list string, node int) (int, error) {
	i := 0
	for _, item := range strings.Split(list, ",") {
		n, reps := item, 1
		if a, b, ok := strings.Cut(item, "(x"); ok {
			r, err := strconv.Atoi(strings.TrimSuffix(b, ")"))
			if err != nil || r < 1 {
				return 0, fmt.Errorf("tasks per node %q: bad repeat in %q", list, item)
			}
			n, reps = a, r
		}
		k, err := strconv.Atoi(n)
		if err != nil || k < 0 {
			return 0, fmt.Errorf("tasks per node %q: bad count %q", list, item)
		}
		if node < i+reps {
			return k, nil
		}
		i += reps
	}
	return 0, fmt.Errorf("tasks per node %q: no node %d", list, node)
}

// Threads is the number of libtorch threads this process takes when not
// told (--threads 0), and whence: the CPUs this process may run on (its
// affinity mask, which Slurm's and taskset's binding restrict; Go's
// runtime.NumCPU reads it with sched_getaffinity) divided among the ranks
// that share this node, and inside a Slurm job no more than the CPUs the
// job holds on this node (SLURM_CPUS_ON_NODE) divided among those ranks,
// nor than SLURM_CPUS_PER_TASK. A process outside any launcher and job
// keeps every CPU of its mask, as before.
func Threads(c Config) (int, string) {
	return threads(c, runtime.NumCPU(), os.LookupEnv)
}

func threads(c Config, cpus int, env func(string) (string, bool)) (int, string) {
	n, from := max(cpus, 1), "affinity"
	local := localSize(c, env)
	if local > 1 {
		n, from = max(1, n/local), fmt.Sprintf("affinity/%d local ranks", local)
	}
	// Without CPU binding (TaskPlugin=task/none) the mask is the whole
	// node, and two array tasks of one CPU each took two threads apiece: a
	// probe measured training 6× slower than with one. What Slurm
	// allocated on this node bounds it too.
	if v, ok := env("SLURM_CPUS_ON_NODE"); ok {
		if k, err := strconv.Atoi(v); err == nil && k > 0 {
			if per := max(1, k/max(local, 1)); per < n {
				n, from = per, "SLURM_CPUS_ON_NODE"
				if local > 1 {
					from = fmt.Sprintf("SLURM_CPUS_ON_NODE/%d local ranks", local)
				}
			}
		}
	}
	if v, ok := env("SLURM_CPUS_PER_TASK"); ok {
		if k, err := strconv.Atoi(v); err == nil && k > 0 && k < n {
			n, from = k, "SLURM_CPUS_PER_TASK"
		}
	}
	return n, from
}

// PortSpan is how many ports after a derived one are tried when it is taken.
const PortSpan = 32

// derivedPort is the first rendezvous port tried by a launch that was
// given none: a port in [20000, 32700) derived from the job and step ids,
// so that array tasks and steps sharing a node usually start on different
// ports (and move to the next free one when not). With the PortSpan after
// it, it stays below Linux's default ephemeral range (32768 on), where
// outgoing connections would take it between the meeting and the store.
func derivedPort(env func(string) (string, bool)) int {
	h := fnv.New32a()
	for _, k := range []string{"SLURM_JOB_ID", "SLURM_STEP_ID", "TORCHELASTIC_RUN_ID"} {
		v, _ := env(k)
		fmt.Fprintf(h, "%s=%s;", k, v)
	}
	return 20000 + int(h.Sum32()%12700)
}

// meetToken names one launch: ranks of another job that reach this one's
// rendezvous port are turned away.
func meetToken(c Config, env func(string) (string, bool)) string {
	get := func(k string) string { v, _ := env(k); return v }
	return fmt.Sprintf("%s/%s.%s/%s/%d", c.Source, get("SLURM_JOB_ID"), get("SLURM_STEP_ID"), get("TORCHELASTIC_RUN_ID"), c.Size)
}
