package safetensors

import (
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
)

// BenchmarkFloat32 reads one 4 Mi-element tensor (16 MiB as float32) per
// iteration; MB/s counts the bytes stored in the file, so BF16 and F16 move
// half the bytes of F32 for the same tensor. The file is fresh in the page
// cache: this measures the conversion and copying, not the disk.
func BenchmarkFloat32(b *testing.B) {
	const n = 4 << 20
	vals := make([]float32, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range vals {
		vals[i] = float32(rng.NormFloat64() * 0.02)
	}
	for _, dtype := range []string{BF16, F16, F32} {
		b.Run(dtype, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "w.safetensors")
			ts := []Tensor{{Name: "w", DType: dtype, Shape: []int64{n / 1024, 1024}}}
			if err := Write(path, ts, nil, func(int) ([]float32, error) { return vals, nil }); err != nil {
				b.Fatal(err)
			}
			f, err := Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(n * dtypeSize[dtype])
			b.ResetTimer()
			for range b.N {
				if _, err := f.Float32("w"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Reading a tensor allocates its float32 result and, for 16-bit dtypes, one
// bounded staging chunk: never a copy of the file or of the stored tensor,
// so loading a model one tensor at a time peaks near its float32 size.
func TestFloat32AllocatesOnlyTheResult(t *testing.T) {
	const n = 3 << 20 // 3 Mi elements: 12 MiB as float32
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i%1000) / 7
	}
	for _, dtype := range []string{BF16, F16, F32} {
		path := filepath.Join(t.TempDir(), "w.safetensors")
		// Two tensors, so that reading one must not pull in the other.
		ts := []Tensor{{Name: "a", DType: dtype, Shape: []int64{n}}, {Name: "b", DType: dtype, Shape: []int64{n}}}
		if err := Write(path, ts, nil, func(int) ([]float32, error) { return vals, nil }); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := f.Float32("b")
		runtime.ReadMemStats(&after)
		f.Close()
		if err != nil || len(got) != n {
			t.Fatalf("%s: %d values, %v", dtype, len(got), err)
		}
		limit := uint64(4*n + 2*chunk + 64<<10)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit {
			t.Errorf("%s: reading a %d MiB float32 tensor allocated %d bytes, want at most %d", dtype, 4*n>>20, alloc, limit)
		}
	}
}
