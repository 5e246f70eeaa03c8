// Command gendoc collects the doc comments of the stage packages' Config
// fields into experiments/keydocs_generated.go, so that `memo config
// --defaults` prints each key with the comment its owner wrote beside it:
// the defaults are documented in one place, the Config structs.
//
// Run through go generate in the experiments directory.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/memo-research/memo/experiments/internal/keydoc"
)

func main() {
	root := flag.String("root", "..", "module root")
	out := flag.String("out", "keydocs_generated.go", "output file")
	flag.Parse()
	src, err := keydoc.Generate(*root)
	if err != nil {
		log.Fatalf("gendoc: %v", err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatalf("gendoc: %v", err)
	}
}
