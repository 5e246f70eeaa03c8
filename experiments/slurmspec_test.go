package experiments

import (
	"strings"
	"testing"
)

// TestSlurmTable: [slurm] is read and checked like any table, an unknown
// key or an option sbatch does not know is refused, and a run's
// config.toml leaves it (and an unused [mia]) out.
func TestSlurmTable(t *testing.T) {
	spec, err := ParseBytes("s.toml", []byte("name = \"s\"\n[slurm]\nmem = \"16G\"\narray_throttle = 4\nsbatch = [\"--mail-type=END\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Slurm.Mem != "16G" || spec.Slurm.ArrayThrottle != 4 || len(spec.Slurm.Sbatch) != 1 {
		t.Errorf("slurm table read as %+v", spec.Slurm)
	}
	conf, err := spec.TOML()
	if err != nil {
		t.Fatal(err)
	}
	// Byte for byte what memo wrote before [mia] and [slurm] existed: it
	// ends with [plots]'s last line, no blank line after it.
	if !strings.HasSuffix(string(conf), "smooth = 0\n") {
		t.Errorf("config.toml ends %q, want the [plots] table's last line", conf[max(0, len(conf)-40):])
	}
	for _, table := range []string{"[slurm]", "[mia]", "16G"} {
		if strings.Contains(string(conf), table) {
			t.Errorf("config.toml holds %s:\n%s", table, conf)
		}
	}
	plain, _ := ParseBytes("p.toml", []byte("name = \"s\"\n"))
	if h1, _ := spec.Hash(); func() bool { h2, _ := plain.Hash(); return h1 != h2 }() {
		t.Error("a [slurm] table changed the run's identity")
	}
	for _, c := range []struct{ doc, want string }{
		{"[slurm]\nmemory = \"16G\"\n", "memory"},
		{"[slurm]\nsbatch = [\"--frobnicate=1\"]\n", "sbatch has no option --frobnicate"},
		{"[slurm]\nsbatch = [\"--array=0-3\"]\n", "memo sets --array itself"},
		{"[slurm]\nsbatch = [\"--nodes=3\"]\n", "memo sets --nodes itself from --nodes and --nproc"},
		{"[slurm]\ncpus = -1\n", "slurm.cpus = -1"},
		// Found only by memo sweep, these were named --time and --mem.
		{"[slurm]\ntime = \"abc\"\n", `slurm.time = "abc": want minutes`},
		{"[slurm]\nmem = \"lots\"\n", `slurm.mem = "lots": want a size`},
		{"[slurm]\npartition = \"a b\"\n", `slurm.partition = "a b": no spaces`},
	} {
		_, err := ParseBytes("s.toml", []byte("name = \"s\"\n"+c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.doc, err, c.want)
		}
	}
}
