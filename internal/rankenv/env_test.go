package rankenv

import (
	"reflect"
	"strings"
	"testing"
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
		{name: "slurm", flag: Unset(), env: slurm,
			want: Config{Rank: 5, Size: 8, LocalRank: 1, Addr: "gpu03", Port: DefaultPort, Source: "slurm"}},
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
