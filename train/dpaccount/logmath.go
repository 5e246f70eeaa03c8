package dpaccount

import (
	"errors"
	"math"
)

// logAdd is log(e^x + e^y) without overflow.
func logAdd(x, y float64) float64 {
	a, b := math.Min(x, y), math.Max(x, y)
	if math.IsInf(a, -1) {
		return b
	}
	return math.Log1p(math.Exp(a-b)) + b
}

// logSub is log(e^x − e^y) for x ≥ y.
func logSub(x, y float64) (float64, error) {
	switch {
	case x < y:
		return 0, errors.New("log-space subtraction went negative")
	case math.IsInf(y, -1):
		return x, nil
	case x == y:
		return math.Inf(-1), nil
	}
	d := math.Expm1(x - y)
	if math.IsInf(d, 1) {
		return x, nil
	}
	return math.Log(d) + y, nil
}

// logBinomInt is log C(n, k) by log-gamma: exact enough for n up to the
// largest order (63) and never overflowing.
func logBinomInt(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// logErfc is log(erfc(x)), accurate where erfc underflows: math.Erfc up to
// x = 20 (erfc(20) ≈ 5e-176, still a normal float), beyond it the
// asymptotic series erfc(x) = e^{−x²}/(x√π)·(1 − 1/(2x²) + 3/(4x⁴) − …),
// whose truncation error at x ≥ 20 is far below float precision.
func logErfc(x float64) float64 {
	if x < 20 {
		return math.Log(math.Erfc(x))
	}
	x2 := x * x
	// 1 − 1/(2x²) + 1·3/(2x²)² − 1·3·5/(2x²)³ + 1·3·5·7/(2x²)⁴
	u := 1 / (2 * x2)
	s := 1 - u + 3*u*u - 15*u*u*u + 105*u*u*u*u
	return -x2 - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log(s)
}
