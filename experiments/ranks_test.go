package experiments

import (
	"context"
	"strings"
	"testing"

	"github.com/memo-research/memo/dist"
)

// experiments reads the launcher's environment exactly as dist does: the
// rank that keeps the books is the rank the process group calls 0. With
// torchrun's WORLD_SIZE but no RANK beside a Slurm SLURM_PROCID, the old
// private reading took rank 2 from Slurm while dist took torchrun's 0;
// both now refuse it.
func TestRanksReadAsDistReadsThem(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"single", nil},
		{"torchrun", map[string]string{"RANK": "3", "WORLD_SIZE": "4"}},
		{"slurm", map[string]string{"SLURM_STEP_ID": "0", "SLURM_PROCID": "1", "SLURM_NTASKS": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_JOB_NODELIST"} {
				t.Setenv(k, tc.env[k])
			}
			d, err := dist.Discover(dist.Unset())
			if err != nil {
				t.Fatal(err)
			}
			if processRank() != d.Rank || worldSize() != d.Size {
				t.Errorf("experiments reads rank %d of %d, dist %d of %d", processRank(), worldSize(), d.Rank, d.Size)
			}
		})
	}
}

func TestRunRefusesAMalformedLaunchEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"RANK": "x", "WORLD_SIZE": "2"}, `RANK="x"`},
		{map[string]string{"WORLD_SIZE": "4", "SLURM_STEP_ID": "0", "SLURM_PROCID": "2", "SLURM_NTASKS": "4"}, "WORLD_SIZE=4 without RANK"},
	} {
		for _, k := range []string{"RANK", "WORLD_SIZE", "SLURM_STEP_ID", "SLURM_PROCID", "SLURM_NTASKS"} {
			t.Setenv(k, tc.env[k])
		}
		spec, err := ParseBytes("mini.toml", []byte(miniSpec))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), spec, t.TempDir(), Options{Stages: []string{"train"}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Run with %v: %v, want an error naming %q", tc.env, err, tc.want)
		}
	}
}
