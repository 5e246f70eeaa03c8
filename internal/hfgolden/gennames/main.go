// Command gennames writes internal/hfgolden/names_generated.go, the lists
// of reference checkpoints, from the directories of testdata/hf and
// testdata/hf-transformers, so that adding a golden is adding its
// directory. Run through go generate in internal/hfgolden.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/memo-research/memo/internal/hfgolden"
)

func main() {
	root := flag.String("root", "../..", "repository root")
	out := flag.String("out", "names_generated.go", "output file")
	flag.Parse()
	src, err := hfgolden.NamesSource(*root)
	if err != nil {
		log.Fatalf("gennames: %v", err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatalf("gennames: %v", err)
	}
}
