// Package czlib compresses with the C zlib library, as Python's
// zlib.compress does: the zlib membership statistic (Carlini et al. 2021,
// the goldfish reference's eval/mia.py) divides a loss by
// len(zlib.compress(text)), and Go's compress/zlib, a different deflate,
// gives lengths a few bytes apart from it.
package czlib

/*
#cgo LDFLAGS: -lz
#include <stdlib.h>
#include <zlib.h>

// memo_zlib_len is the length of compress2(src, Z_DEFAULT_COMPRESSION),
// Python's zlib.compress(src), or -1 on failure.
static long memo_zlib_len(const unsigned char *src, unsigned long n) {
	uLongf cap = compressBound(n);
	unsigned char *dst = malloc(cap ? cap : 1);
	if (!dst) return -1;
	int rc = compress2(dst, &cap, src, n, Z_DEFAULT_COMPRESSION);
	free(dst);
	return rc == Z_OK ? (long)cap : -1;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Len is len(zlib.compress(b)) in Python: zlib's default level (6), a
// zlib header and an Adler-32 trailer.
func Len(b []byte) (int, error) {
	var p *C.uchar
	if len(b) > 0 {
		p = (*C.uchar)(unsafe.Pointer(&b[0]))
	}
	n := C.memo_zlib_len(p, C.ulong(len(b)))
	if n < 0 {
		return 0, fmt.Errorf("zlib: compress2 failed on %d bytes", len(b))
	}
	return int(n), nil
}
