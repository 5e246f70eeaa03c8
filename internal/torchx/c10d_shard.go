package torchx

// #include <stdlib.h>
// #include "c10d.h"
import "C"

import (
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
func (g *ProcessGroup) ShardAllGather(t []*ts.Tensor, shard, chunk int64) error {
	return g.shardCall(t, func(arr *unsafe.Pointer, e **C.char) C.int {
		return C.memo_pg_shard_allgather(g.p, arr, C.int(len(t)), C.int64_t(shard), C.int64_t(chunk), e)
	})
}

// ShardReduceScatter sums the ranks' t into this rank's owned range (a ring
// of send/recv: Gloo in libtorch 1.13 has no reduce_scatter); outside that
// range t is left holding partial sums, to be ignored.
func (g *ProcessGroup) ShardReduceScatter(t []*ts.Tensor, shard, chunk int64) error {
	return g.shardCall(t, func(arr *unsafe.Pointer, e **C.char) C.int {
		return C.memo_pg_shard_reduce_scatter(g.p, arr, C.int(len(t)), C.int64_t(shard), C.int64_t(chunk), e)
	})
}

// ShardGather copies every rank's local vector (shard elements) into root's
// full tensors at that rank's owned range; ranks other than root pass no
// full tensors.
func (g *ProcessGroup) ShardGather(full []*ts.Tensor, local *ts.Tensor, shard int64, root int) error {
	return g.shardRoot(full, local, shard, root, true)
}

// ShardScatter is ShardGather's inverse: each rank's local vector receives
// its owned range of root's full tensors.
func (g *ProcessGroup) ShardScatter(full []*ts.Tensor, local *ts.Tensor, shard int64, root int) error {
	return g.shardRoot(full, local, shard, root, false)
}

func (g *ProcessGroup) shardRoot(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, toRoot bool) error {
	loc, err := cTensors([]*ts.Tensor{local})
	if err != nil {
		return err
	}
	defer C.free(loc)
	dir := C.int(0)
	if toRoot {
		dir = 1
	}
	err = g.shardCall(full, func(arr *unsafe.Pointer, e **C.char) C.int {
		return C.memo_pg_shard_root(g.p, arr, C.int(len(full)), *(*unsafe.Pointer)(loc), C.int64_t(shard), C.int(root), dir, e)
	})
	runtime.KeepAlive(local)
	return err
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
