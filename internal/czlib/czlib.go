// Package czlib compresses with the C zlib library, as Python's
// zlib.compress does: the zlib membership statistic (Carlini et al. 2021,
// the goldfish reference's eval/mia.py) divides a loss by
// len(zlib.compress(text)), and Go's compress/zlib, a different deflate,
// gives lengths a few bytes apart from it.
//
// libz.so.1 is opened at run time (dlopen) rather than linked: a memo
// built against another machine's libtorch (../shared/gpu) may name only
// that libtorch's and the C library's symbols, and every Linux system has
// zlib.
package czlib

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef int (*compress2_fn)(unsigned char *, unsigned long *, const unsigned char *, unsigned long, int);
typedef unsigned long (*bound_fn)(unsigned long);

static compress2_fn memo_compress2;
static bound_fn memo_bound;

// memo_zlib_open finds compress2 and compressBound; 0 on success.
static int memo_zlib_open(void) {
	if (memo_compress2) return 0;
	void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) return -1;
	memo_bound = (bound_fn)dlsym(h, "compressBound");
	memo_compress2 = (compress2_fn)dlsym(h, "compress2");
	return memo_compress2 && memo_bound ? 0 : -2;
}

// memo_zlib_len is the length of compress2(src, Z_DEFAULT_COMPRESSION),
// Python's zlib.compress(src), or a negative number on failure.
static long memo_zlib_len(const unsigned char *src, unsigned long n) {
	if (memo_zlib_open() != 0) return -1;
	unsigned long cap = memo_bound(n);
	unsigned char *dst = malloc(cap ? cap : 1);
	if (!dst) return -2;
	int rc = memo_compress2(dst, &cap, src, n, -1); // Z_DEFAULT_COMPRESSION: level 6
	free(dst);
	return rc == 0 ? (long)cap : -3; // Z_OK
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
	switch n := C.memo_zlib_len(p, C.ulong(len(b))); {
	case n == -1:
		return 0, fmt.Errorf("zlib: libz.so.1 not found (install zlib, e.g. apt-get install zlib1g)")
	case n < 0:
		return 0, fmt.Errorf("zlib: compress2 failed on %d bytes (code %d)", len(b), n)
	default:
		return int(n), nil
	}
}
