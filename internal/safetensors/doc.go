// Package safetensors reads and writes Hugging Face's safetensors format in
// pure Go, one tensor at a time, so that loading a model needs little more
// memory than its float32 weights.
//
// A file is an 8-byte little-endian header length N, N bytes of JSON
// mapping each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end)} plus an optional "__metadata__" map of strings, then the raw
// little-endian data, the offsets counting from its first byte. memo reads
// F32, BF16 and F16 tensors into float32 and writes any of the three.
//
// Open checks the whole header against the file before any tensor is read:
// every dtype is one the format defines, every byte size matches the
// shape, the tensors tile the data section without gap or overlap, and the
// data ends where the file does. A truncated or padded file therefore fails
// at Open, naming the file and the tensor, never half-way through a load.
//
// A model directory holds either model.safetensors or shards named by
// model.safetensors.index.json's weight_map; OpenDir presents both as one
// Set.
package safetensors

import "encoding/binary"

func init() {
	// Float32 reads F32 data straight into the float32 slice it returns and
	// Write writes float32 memory as it lies, which is only the file's
	// byte order on a little-endian host.
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		panic("safetensors: this package assumes a little-endian host")
	}
}
