package rankenv

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestExpandNodeList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "node01", want: []string{"node01"}},
		{in: "node[01-04,07]", want: []string{"node01", "node02", "node03", "node04", "node07"}},
		{in: "gpu[9-11],cpu3", want: []string{"gpu9", "gpu10", "gpu11", "cpu3"}},
		{in: "r[1-2]-n[08-09]", want: []string{"r1-n08", "r1-n09", "r2-n08", "r2-n09"}},
		{in: "a[001-002]b,c[5]", want: []string{"a001b", "a002b", "c5"}},
		{in: "", bad: true},
		{in: "node[3-1]", bad: true},
		{in: "node[01", bad: true},
		{in: "node[x]", bad: true},
		{in: "a,,b", bad: true},
	} {
		got, err := ExpandNodeList(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ExpandNodeList(%q) = %v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ExpandNodeList(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	if h, err := FirstHost("node[07-08],x"); err != nil || h != "node07" {
		t.Errorf("FirstHost = %q, %v; want node07", h, err)
	}
}

func TestDiscover(t *testing.T) {
	torchrun := map[string]string{"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "1234"}
	slurm := map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_JOB_NODELIST": "gpu[03-06]"}
	both := map[string]string{}
	for k, v := range slurm {
		both[k] = v
	}
	for k, v := range torchrun {
		both[k] = v
	}
	for _, c := range []struct {
		name string
		flag Config
		env  map[string]string
		want Config
		bad  string
	}{
		{name: "single", flag: Unset(), env: nil,
			want: Config{Rank: 0, Size: 1, LocalRank: 0, Addr: "127.0.0.1", Port: DefaultPort, Source: "single"}},
		{name: "torchrun", flag: Unset(), env: torchrun,
			want: Config{Rank: 1, Size: 4, LocalRank: 1, Addr: "10.0.0.1", Port: 1234, PortSet: true, Source: "torchrun"}},
		// No port given: the meeting starts from one derived from the
		// job (two jobs on a node both started from 29500).
		{name: "slurm", flag: Unset(), env: slurm,
			want: Config{Rank: 5, Size: 8, LocalRank: 1, Addr: "gpu03", Port: derivedPort(mapEnv(slurm)), Source: "slurm"}},
		// torchrun's agent serves its store on MASTER_PORT: memo's ranks
		// meet on a port of their own.
		{name: "torchrun agent store", flag: Unset(), env: withEnv(torchrun, AgentStoreEnv, "True"),
			want: Config{Rank: 1, Size: 4, LocalRank: 1, Addr: "10.0.0.1", Port: derivedPort(noEnv), Source: "torchrun"}},
		{name: "torchrun before slurm", flag: Unset(), env: both,
			want: Config{Rank: 1, Size: 4, LocalRank: 1, Addr: "10.0.0.1", Port: 1234, PortSet: true, Source: "torchrun"}},
		{name: "flags first", flag: Config{Rank: 2, Size: 3, LocalRank: -1, Port: 999}, env: both,
			want: Config{Rank: 2, Size: 3, LocalRank: 1, Addr: "10.0.0.1", Port: 999, PortSet: true, Source: "flags"}},
		// An sbatch script's shell: SLURM_PROCID=0 and the allocation's
		// SLURM_NTASKS, but no step. It is one process, not rank 0 of 2.
		{name: "batch shell", flag: Unset(), env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0", "SLURM_JOB_NODELIST": "localhost"},
			want: Config{Rank: 0, Size: 1, LocalRank: 0, Addr: "127.0.0.1", Port: DefaultPort, Source: "single"}},
		{name: "port out of range", flag: Unset(), env: map[string]string{"MASTER_PORT": "70000"}, bad: "port 70000"},
		{name: "rank out of range", flag: Unset(), env: map[string]string{"RANK": "4", "WORLD_SIZE": "4"}, bad: "rank 4"},
		{name: "not a number", flag: Unset(), env: map[string]string{"RANK": "x", "WORLD_SIZE": "2"}, bad: `RANK="x"`},
		// A step on some of the allocation's nodes starts task 0 on its
		// own first node.
		{name: "slurm step nodes", flag: Unset(), env: map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "node[01-04]", "SLURM_STEP_NODELIST": "node[03-04]"},
			want: Config{Rank: 1, Size: 2, LocalRank: 0, Addr: "node03", Port: derivedPort(mapEnv(map[string]string{"SLURM_STEP_ID": "0"})), Source: "slurm"}},
		// A script's export WORLD_SIZE=$SLURM_NTASKS made every task rank 0.
		{name: "world size without rank", flag: Unset(), env: map[string]string{"WORLD_SIZE": "4", "SLURM_STEP_ID": "0", "SLURM_PROCID": "2", "SLURM_NTASKS": "4"}, bad: "WORLD_SIZE=4 without RANK"},
		{name: "rank without world size", flag: Unset(), env: map[string]string{"RANK": "1"}, bad: "RANK=1 without WORLD_SIZE"},
		{name: "bad timeout", flag: Unset(), env: map[string]string{TimeoutEnv: "ten minutes"}, bad: TimeoutEnv + `="ten minutes"`},
		{name: "bad nodelist", flag: Unset(), env: map[string]string{"SLURM_STEP_ID": "3", "SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "n[2-1]"}, bad: "SLURM_JOB_NODELIST"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := discover(c.flag, func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			if c.bad != "" {
				if err == nil || !strings.Contains(err.Error(), c.bad) {
					t.Fatalf("error %v, want one mentioning %q", err, c.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.want.Timeout, c.want.DeadAfter, c.want.Backend = DefaultTimeout, DefaultDeadAfter, "gloo"
			if got != c.want {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestDiscoverTimeout: MEMO_DIST_TIMEOUT replaces the default timeout; a
// timeout given explicitly wins over it.
func TestDiscoverTimeout(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == TimeoutEnv {
			return "45m", true
		}
		return "", false
	}
	if got, err := discover(Unset(), env); err != nil || got.Timeout != 45*time.Minute {
		t.Errorf("with %s=45m: timeout %v, %v", TimeoutEnv, got.Timeout, err)
	}
	c := Unset()
	c.Timeout = time.Minute
	if got, err := discover(c, env); err != nil || got.Timeout != time.Minute {
		t.Errorf("given 1m and %s=45m: timeout %v, %v; want 1m", TimeoutEnv, got.Timeout, err)
	}
}

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

// mapEnv is the environment m.
func mapEnv(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// withEnv is env with k set to v.
func withEnv(env map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for ek, ev := range env {
		if ek != k {
			out[ek] = ev
		}
	}
	return out
}

// TestUseMeetingPort: after the meeting, the process group reads the
// port the ranks met on from MASTER_PORT, even where torchrun's agent
// said MASTER_PORT was its store's.
func TestUseMeetingPort(t *testing.T) {
	t.Setenv("RANK", "0")
	t.Setenv("WORLD_SIZE", "2")
	t.Setenv("MASTER_PORT", "29500")
	t.Setenv(AgentStoreEnv, "True")
	if c, err := Discover(Unset()); err != nil || c.PortSet {
		t.Fatalf("under the agent store: %+v, %v; want MASTER_PORT left to the agent", c, err)
	}
	if err := UseMeetingPort(23456); err != nil {
		t.Fatal(err)
	}
	if c, err := Discover(Unset()); err != nil || !c.PortSet || c.Port != 23456 {
		t.Errorf("after UseMeetingPort(23456): %+v, %v", c, err)
	}
}
