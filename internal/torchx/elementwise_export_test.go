package torchx

// The kernels' host code, for the external tests.
var (
	SetElementwiseOnHost   = setElementwiseOnHost
	ElementwiseCheckOnHost = elementwiseCheckOnHost
)
