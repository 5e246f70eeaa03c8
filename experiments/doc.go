// Package experiments turns one TOML spec into runs: strict parsing with
// defaults from each stage package and errors that name file, line and key;
// run directories with config.toml and manifest.json; the data → train →
// extract → eval → plots pipeline with resume; sweep grids run locally as
// subprocesses or as a Slurm job array.
//
// Spec layout (see `memo config --defaults` for every key):
//
//	name = "goldfish-k4"
//	seed = 1234
//	[data] [model] [train] [goldfish] [extract] [eval] [plots]
//	[sweep]
//	"goldfish.k" = [0, 4]
//
// A sweep directory runs/<name>/ holds sweep.json (axes and points, read by
// package plots), specs/<point>.toml (the spec each point runs), logs/, one
// run directory per point and report/.
package experiments

//go:generate go run ./internal/gendoc -root .. -out keydocs_generated.go
