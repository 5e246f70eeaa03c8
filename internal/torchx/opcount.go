package torchx

// #include <stdlib.h>
// #include "opcount.h"
import "C"

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unsafe"
)

// OpCount is one name's calls while counting: an operator's (aten::mm) or
// an autograd node's (MmBackward0). Outer are the operator calls made
// from outside any operator: memo's own, and those of autograd's nodes,
// where the rest are made inside a composite (aten::linear calls
// aten::matmul, which calls aten::mm).
type OpCount struct {
	Name  string `json:"name"`
	Calls int64  `json:"calls"`
	Outer int64  `json:"outer"`
}

// OpCounts are the operators and autograd nodes libtorch ran while
// counting (CountOps), each sorted by calls, most first, and the calls of
// memo's own elementwise kernels meanwhile (ElementwiseCalls), which are
// not libtorch operators.
type OpCounts struct {
	Ops         []OpCount `json:"ops"`
	Nodes       []OpCount `json:"autograd_nodes"`
	KernelCalls int64     `json:"memo_kernel_calls"`
}

// Calls is the operator calls, nested ones included; outer those made
// from outside any operator; nodeCalls the autograd nodes'.
func (c OpCounts) Calls() (calls, outer, nodeCalls int64) {
	for _, o := range c.Ops {
		calls += o.Calls
		outer += o.Outer
	}
	for _, n := range c.Nodes {
		nodeCalls += n.Calls
	}
	return calls, outer, nodeCalls
}

// CountOps runs fn with every libtorch operator call counted, and memo's
// kernel calls (an OpCounter around it).
func CountOps(fn func() error) (OpCounts, error) {
	var c OpCounter
	if err := c.Start(); err != nil {
		return OpCounts{}, err
	}
	err := fn()
	counts, cerr := c.Stop()
	if err == nil {
		err = cerr
	}
	if counts == nil {
		return OpCounts{}, err
	}
	return *counts, err
}

// startOpCount starts counting every libtorch operator call, on every
// thread (libtorch's RecordFunction callbacks), until stopOpCount.
// Counting costs a lock a call, so time measured meanwhile is not the
// uncounted rate. One count at a time: starting a second fails.
func startOpCount() error {
	var e *C.char
	if C.memo_opcount_start(&e) != 0 {
		return fmt.Errorf("count libtorch operators: %v", cErr(e))
	}
	return nil
}

// stopOpCount stops counting and returns what was counted since
// startOpCount.
func stopOpCount() (OpCounts, error) {
	text := C.memo_opcount_stop()
	defer C.free(unsafe.Pointer(text))
	return parseOpCounts(C.GoString(text))
}

// parseOpCounts reads memo_opcount_stop's lines: kind, name, calls,
// outer calls, tab-separated.
func parseOpCounts(text string) (OpCounts, error) {
	out := OpCounts{Ops: []OpCount{}, Nodes: []OpCount{}} // [] in JSON, not null
	lines, err := parseTallies(text, "operator counts", "calls and outer calls")
	if err != nil {
		return out, err
	}
	for _, l := range lines {
		c := OpCount{Name: l.name, Calls: l.a, Outer: l.b}
		if l.kind == "node" {
			out.Nodes = append(out.Nodes, c)
		} else {
			out.Ops = append(out.Ops, c)
		}
	}
	for _, list := range [][]OpCount{out.Ops, out.Nodes} {
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].Calls != list[j].Calls {
				return list[i].Calls > list[j].Calls
			}
			return list[i].Name < list[j].Name
		})
	}
	return out, nil
}

// tally is one line of the C side's tallies (memo_opcount_stop,
// memo_kernelprof_stop): a kind, a name and two integers, tab-separated.
type tally struct {
	kind, name string
	a, b       int64
}

// parseTallies reads tally lines; what names the tallies in errors and
// counts their two integers.
func parseTallies(text, what, counts string) ([]tally, error) {
	var out []tally
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s: line %q: want 4 fields", what, line)
		}
		a, err1 := strconv.ParseInt(f[2], 10, 64)
		b, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: line %q: %s must be integers", what, line, counts)
		}
		out = append(out, tally{kind: f[0], name: f[1], a: a, b: b})
	}
	return out, nil
}

// OpCounter is a count that may or may not be started: Stop returns nil
// when Start was not called, and stops a started count once, so a
// deferred Stop ends a count that an error path left running. Its counts
// include memo's kernel calls (OpCounts.KernelCalls).
type OpCounter struct {
	counting bool
	kernels  int64 // ElementwiseCalls at Start
}

// Start starts counting (startOpCount).
func (c *OpCounter) Start() error {
	if err := startOpCount(); err != nil {
		return err
	}
	c.counting, c.kernels = true, ElementwiseCalls()
	return nil
}

// Stop ends a started count and returns it; nil when none was started.
func (c *OpCounter) Stop() (*OpCounts, error) {
	if !c.counting {
		return nil, nil
	}
	c.counting = false
	counts, err := stopOpCount()
	if err != nil {
		return nil, err
	}
	counts.KernelCalls = ElementwiseCalls() - c.kernels
	return &counts, nil
}
