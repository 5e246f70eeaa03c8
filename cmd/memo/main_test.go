package main

import (
	"os"
	"testing"
)

func TestRunsModels(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"run", "exp/smoke.toml"}, true},
		{[]string{"--log-level", "debug", "bench", "train"}, true},
		{[]string{"--log-level=debug", "extract", "runs/x"}, true},
		{[]string{"run", "--help"}, false},
		{[]string{"help", "run"}, false},
		{[]string{"config", "--defaults"}, false},
		{[]string{"--log-level", "run"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := runsModels(tt.args); got != tt.want {
			t.Errorf("runsModels(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// TestRankPrefix: a rank other than 0 of a launch names itself on its last
// line; rank 0 and a single process do not.
func TestRankPrefix(t *testing.T) {
	for _, tc := range []struct {
		rank, size string
		nproc      bool // started by memo run --nproc, which labels its ranks' lines
		want       string
	}{
		{"", "", false, ""},
		{"0", "2", false, ""},
		{"1", "2", false, "rank 1 of 2: "},
		{"3", "4", false, "rank 3 of 4: "},
		{"1", "2", true, ""},
	} {
		t.Setenv("MEMO_DIST_LAUNCHED", "")
		if tc.nproc {
			t.Setenv("MEMO_DIST_LAUNCHED", "1")
		}
		for _, k := range []string{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"} {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
		t.Setenv("RANK", tc.rank)
		t.Setenv("WORLD_SIZE", tc.size)
		if tc.rank == "" {
			os.Unsetenv("RANK")
			os.Unsetenv("WORLD_SIZE")
		}
		if got := rankPrefix(); got != tc.want {
			t.Errorf("RANK=%q WORLD_SIZE=%q: rankPrefix() = %q, want %q", tc.rank, tc.size, got, tc.want)
		}
	}
}
