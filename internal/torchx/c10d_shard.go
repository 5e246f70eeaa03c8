package torchx

// #include <stdlib.h>
// #include "c10d.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// Sharded collectives (c10d_shard.cpp). Each reads its tensors, of one
// dtype and contiguous, as one flat vector in list order; rank r owns the
// elements [r*shard, (r+1)*shard) of it, the last rank's range padded past
// the end. chunk bounds the elements per rank moved in one round (and so
// the scratch memory, size × chunk elements).

// ShardAllGather copies every rank's owned range of t into every rank's t.
// members, when not nil, are the ranks taking part (the i-th owns range i),
// a ring among them; nil: every rank, in rank order.
func (g *ProcessGroup) ShardAllGather(t []*ts.Tensor, shard, chunk int64, members []int) error {
	return g.withInts(members, func(m *C.int) error {
		return g.shardCall(t, func(arr *unsafe.Pointer, e **C.char) C.int {
			return C.memo_pg_shard_allgather(g.p, arr, C.int(len(t)), C.int64_t(shard), C.int64_t(chunk), m, C.int(len(members)), e)
		})
	})
}

// ShardReduceScatter sums the ranks' t into this rank's owned range (a ring
// of send/recv: Gloo in libtorch 1.13 has no reduce_scatter); outside that
// range t is left holding partial sums, to be ignored. members as for
// ShardAllGather.
func (g *ProcessGroup) ShardReduceScatter(t []*ts.Tensor, shard, chunk int64, members []int) error {
	return g.withInts(members, func(m *C.int) error {
		return g.shardCall(t, func(arr *unsafe.Pointer, e **C.char) C.int {
			return C.memo_pg_shard_reduce_scatter(g.p, arr, C.int(len(t)), C.int64_t(shard), C.int64_t(chunk), m, C.int(len(members)), e)
		})
	})
}

// ShardGather copies every rank's local vector (shard elements) into root's
// full tensors at the range that rank owns: range slots[q] for rank q
// (slots nil: range q); ranks other than root pass no full tensors.
func (g *ProcessGroup) ShardGather(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, slots []int) error {
	return g.shardRoot(full, local, shard, root, true, slots)
}

// ShardScatter is ShardGather's inverse: each rank's local vector receives
// its owned range of root's full tensors.
func (g *ProcessGroup) ShardScatter(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, slots []int) error {
	return g.shardRoot(full, local, shard, root, false, slots)
}

func (g *ProcessGroup) shardRoot(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, toRoot bool, slots []int) error {
	if slots != nil && len(slots) != g.Size() {
		return fmt.Errorf("shard slots: %d for a group of %d", len(slots), g.Size())
	}
	loc, err := cTensors([]*ts.Tensor{local})
	if err != nil {
		return err
	}
	defer C.free(loc)
	dir := C.int(0)
	if toRoot {
		dir = 1
	}
	err = g.withInts(slots, func(sl *C.int) error {
		return g.shardCall(full, func(arr *unsafe.Pointer, e **C.char) C.int {
			return C.memo_pg_shard_root(g.p, arr, C.int(len(full)), *(*unsafe.Pointer)(loc), C.int64_t(shard), C.int(root), dir, sl, e)
		})
	})
	runtime.KeepAlive(local)
	return err
}

// withInts calls fn with xs copied into C memory (NULL for nil xs).
func (g *ProcessGroup) withInts(xs []int, fn func(*C.int) error) error {
	if xs == nil {
		return fn(nil)
	}
	mem := (*C.int)(C.malloc(C.size_t(max(len(xs), 1)) * C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(mem))
	arr := unsafe.Slice(mem, len(xs))
	for i, x := range xs {
		arr[i] = C.int(x)
	}
	return fn(mem)
}

// shardCall passes t's libtorch pointers to call and turns its failure into an error.
func (g *ProcessGroup) shardCall(t []*ts.Tensor, call func(arr *unsafe.Pointer, e **C.char) C.int) error {
	arr, err := cTensors(t)
	if err != nil {
		return err
	}
	if arr != nil {
		defer C.free(arr)
	}
	var e *C.char
	rc := call((*unsafe.Pointer)(arr), &e)
	runtime.KeepAlive(t)
	if rc != 0 {
		return cErr(e)
	}
	return nil
}
