package experiments

import (
	"os"
	"strconv"
)

// envInt reads the first of the named environment variables that holds an integer.
func envInt(names ...string) (int, bool) {
	for _, n := range names {
		if v, err := strconv.Atoi(os.Getenv(n)); err == nil {
			return v, true
		}
	}
	return 0, false
}

// processRank and worldSize follow torchrun's conventions, then Slurm's,
// as package dist does: a run under srun or a launcher is one of several
// processes, and only rank 0 keeps the run's books.
func processRank() int {
	r, _ := envInt("RANK", "SLURM_PROCID")
	return r
}

func worldSize() int {
	if n, ok := envInt("WORLD_SIZE", "SLURM_NTASKS"); ok && n > 0 {
		return n
	}
	return 1
}
