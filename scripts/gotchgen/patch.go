package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// sourcePatch is one exact edit of a gotch source file. It applies only
// when old occurs exactly once, so a different gotch release fails the
// setup loudly instead of building an unpatched or half-patched copy.
type sourcePatch struct {
	file     string // relative to the module root
	old, new string
}

// patches are memo's edits of gotch's Go sources.
//
// gotch's ts.newTensor allocates a zeroed 100 KB Go array (bigStruct) with
// every tensor so that Go's collector, which cannot see libtorch's memory,
// runs often enough to free tensors through their finalizers. memo does not
// rely on that: it pauses the collector and frees tensors itself, collecting
// only at step boundaries (internal/torchx, docs/ARCHITECTURE.md), so the
// array is pure cost: a decode step makes hundreds of tensors, and zeroing
// and later collecting 100 KB for each halved decoding throughput
// (docs/DESIGN.md, "Facts measured for the second round"). Training, whose
// tensors are few and large, was unchanged by removing it.
var patches = []sourcePatch{{
	file: "ts/tensor.go",
	old: "\tx.ctensor = ctensor\n" +
		"\tx.d = new(bigStruct)\n",
	new: "\tx.ctensor = ctensor\n" +
		"\t// memo (scripts/gotchgen/patch.go): no 100 KB bigStruct per tensor;\n" +
		"\t// memo frees tensors itself and collects at step boundaries.\n",
}}

// applyPatches edits the copy in dir.
func applyPatches(dir string, ps []sourcePatch) error {
	for _, p := range ps {
		path := filepath.Join(dir, p.file)
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("patch gotch: %w", err)
		}
		src := string(b)
		if n := strings.Count(src, p.old); n != 1 {
			return fmt.Errorf("patch gotch %s: the text to replace occurs %d times, want exactly 1 "+
				"(a gotch release other than the one scripts/gotchgen/patch.go was written for?):\n%s", p.file, n, p.old)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(src, p.old, p.new, 1)), 0o644); err != nil {
			return fmt.Errorf("patch gotch: %w", err)
		}
	}
	return nil
}
