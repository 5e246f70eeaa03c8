package torchx

// #include <stdlib.h>
// #include "c10d.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// ProcessGroup is a c10d process group (Gloo on CPU; NCCL in CUDA builds).
// Its methods must not be called concurrently.
type ProcessGroup struct {
	p    *C.memo_pg
	rank int
	size int
}

// NoHeartbeat is in the error of a collective that a silent peer ended.
const NoHeartbeat = "(no heartbeat)"

// errNoNCCL is returned by NewNCCL in builds without the cuda tag.
var errNoNCCL = errors.New("this memo was built without CUDA (build tag cuda): NCCL is unavailable")

func cErr(e *C.char) error {
	if e == nil {
		return errors.New("unknown c10d error")
	}
	defer C.free(unsafe.Pointer(e))
	return errors.New(C.GoString(e))
}

// NewGloo joins a Gloo group of size ranks through the TCPStore at
// addr:port (served by rank 0). timeout bounds the rendezvous and every
// collective; deadAfter > 0 ends a collective sooner when a peer's
// heartbeat (or rank 0's store) has been silent that long, with an error
// that names the silent ranks and contains NoHeartbeat. iface, when set,
// names the network interface Gloo binds to (like GLOO_SOCKET_IFNAME).
func NewGloo(addr string, port, rank, size int, timeout, deadAfter time.Duration, iface string) (*ProcessGroup, error) {
	ca, ci := C.CString(addr), C.CString(iface)
	defer C.free(unsafe.Pointer(ca))
	defer C.free(unsafe.Pointer(ci))
	var e *C.char
	p := C.memo_pg_new_gloo(ca, C.int(port), C.int(rank), C.int(size), C.int64_t(timeout.Milliseconds()),
		C.int64_t(deadAfter.Milliseconds()), ci, &e)
	if p == nil {
		return nil, cErr(e)
	}
	return &ProcessGroup{p: p, rank: rank, size: size}, nil
}

// Rank is this process's rank.
func (g *ProcessGroup) Rank() int { return g.rank }

// Size is the number of ranks.
func (g *ProcessGroup) Size() int { return g.size }

// cTensors copies the tensors' libtorch pointers into C memory.
func cTensors(t []*ts.Tensor) (unsafe.Pointer, error) {
	if len(t) == 0 {
		return nil, nil
	}
	arr := C.malloc(C.size_t(len(t)) * C.size_t(unsafe.Sizeof(uintptr(0))))
	ptrs := unsafe.Slice((*unsafe.Pointer)(arr), len(t))
	for i, x := range t {
		if x == nil || x.Ctensor() == nil {
			C.free(arr)
			return nil, fmt.Errorf("tensor %d of %d is nil or dropped", i, len(t))
		}
		ptrs[i] = x.Ctensor()
	}
	return arr, nil
}

// AllReduce sums t elementwise across ranks, in place; with mean set it then
// divides by the group size. Tensors are flattened per dtype into buckets
// of at most bucketBytes, which are reduced concurrently.
func (g *ProcessGroup) AllReduce(t []*ts.Tensor, mean bool, bucketBytes int64) error {
	if len(t) == 0 {
		return nil
	}
	arr, err := cTensors(t)
	if err != nil {
		return err
	}
	defer C.free(arr)
	div := C.int(0)
	if mean {
		div = 1
	}
	var e *C.char
	rc := C.memo_pg_allreduce(g.p, (*unsafe.Pointer)(arr), C.int(len(t)), C.int64_t(bucketBytes), div, &e)
	runtime.KeepAlive(t)
	if rc != 0 {
		return cErr(e)
	}
	return nil
}

// Broadcast copies root's tensors into every rank's, in place.
func (g *ProcessGroup) Broadcast(t []*ts.Tensor, root int, bucketBytes int64) error {
	if len(t) == 0 {
		return nil
	}
	arr, err := cTensors(t)
	if err != nil {
		return err
	}
	defer C.free(arr)
	var e *C.char
	rc := C.memo_pg_broadcast(g.p, (*unsafe.Pointer)(arr), C.int(len(t)), C.int(root), C.int64_t(bucketBytes), &e)
	runtime.KeepAlive(t)
	if rc != 0 {
		return cErr(e)
	}
	return nil
}

// Barrier returns once every rank has reached it.
func (g *ProcessGroup) Barrier() error {
	var e *C.char
	if C.memo_pg_barrier(g.p, &e) != 0 {
		return cErr(e)
	}
	return nil
}

// SilentRanks lists the peers whose heartbeat did not advance during wait;
// ok is false when the store (served by rank 0) is unreachable.
func (g *ProcessGroup) SilentRanks(wait time.Duration) (ranks []int, ok bool) {
	out := make([]C.int, g.size)
	n := C.memo_pg_silent_ranks(g.p, &out[0], C.int(len(out)), C.int64_t(wait.Milliseconds()))
	if n < 0 {
		return nil, false
	}
	for _, r := range out[:n] {
		ranks = append(ranks, int(r))
	}
	return ranks, true
}

// Close leaves the group. Call it only after the last collective returned.
func (g *ProcessGroup) Close() {
	if g.p != nil {
		C.memo_pg_free(g.p)
		g.p = nil
	}
}
