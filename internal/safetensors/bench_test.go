package safetensors

import (
	"math/rand/v2"
	"path/filepath"
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
