package model

import (
	"runtime"

	"github.com/sugarme/gotch/ts"
)

// noGrad runs fn with libtorch's gradient recording off. libtorch keeps that
// switch per OS thread, and a goroutine may move between threads between
// cgo calls, so the goroutine is pinned to its thread for the duration.
func noGrad(fn func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ts.NoGrad(fn)
}
