//go:build !cuda

package torchx

// GPUMemory is 0 in a build without the cuda tag: it cannot ask CUDA.
func GPUMemory(index int) int64 { return 0 }

// GPUPeakAllocated is 0 in a build without the cuda tag.
func GPUPeakAllocated(index int) int64 { return 0 }
