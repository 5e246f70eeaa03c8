package safetensors

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// Bit patterns worked out by hand from the IEEE layouts: binary16 is
// 1 sign, 5 exponent (bias 15), 10 mantissa bits; bfloat16 is the top half
// of a float32 (1, 8 with bias 127, 7).

func TestBF16ToFloat32(t *testing.T) {
	cases := []struct {
		name string
		in   uint16
		want uint32 // float32 bits
	}{
		{"one", 0x3f80, 0x3f800000},
		{"minus two", 0xc000, 0xc0000000},
		{"minus zero", 0x8000, 0x80000000},
		{"smallest subnormal 2^-133", 0x0001, 0x00010000},
		{"largest finite", 0x7f7f, 0x7f7f0000},
		{"+inf", 0x7f80, 0x7f800000},
		{"-inf", 0xff80, 0xff800000},
		{"quiet NaN", 0x7fc0, 0x7fc00000},
		{"signalling NaN keeps its payload", 0x7f81, 0x7f810000},
	}
	for _, c := range cases {
		if got := math.Float32bits(BF16ToFloat32(c.in)); got != c.want {
			t.Errorf("%s: BF16ToFloat32(%#04x) = %#08x, want %#08x", c.name, c.in, got, c.want)
		}
	}
}

func TestFloat32ToBF16(t *testing.T) {
	cases := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"minus zero", 0x80000000, 0x8000},
		{"just below a half ulp rounds down", 0x3f807fff, 0x3f80},
		{"just above a half ulp rounds up", 0x3f808001, 0x3f81},
		{"tie to even, down (1 + 2^-8)", 0x3f808000, 0x3f80},
		{"tie to even, up", 0x3f818000, 0x3f82},
		{"negative tie to even, up", 0xbf818000, 0xbf82},
		{"carry into the exponent", 0x3fffc000, 0x4000},
		{"largest float32 overflows to inf", 0x7f7fffff, 0x7f80},
		{"largest float32 below the overflow tie", 0x7f7f7fff, 0x7f7f},
		{"overflow tie (odd 0x7f7f rounds up) is inf", 0x7f7f8000, 0x7f80},
		{"+inf", 0x7f800000, 0x7f80},
		{"-inf", 0xff800000, 0xff80},
		{"quiet NaN", 0x7fc00000, 0x7fc0},
		{"NaN whose payload is all in the low half stays NaN", 0x7f800001, 0x7fc0},
		{"negative NaN", 0xff800001, 0xffc0},
		{"float32 subnormal, exact", 0x00010000, 0x0001},
		{"float32 subnormal, tie to even (zero)", 0x00008000, 0x0000},
		{"float32 subnormal, tie to even (two)", 0x00018000, 0x0002},
		{"smallest float32 subnormal rounds to zero", 0x00000001, 0x0000},
	}
	for _, c := range cases {
		if got := Float32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("%s: Float32ToBF16(%#08x) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
}

func TestF16ToFloat32(t *testing.T) {
	cases := []struct {
		name string
		in   uint16
		want uint32
	}{
		{"one", 0x3c00, 0x3f800000},
		{"minus two", 0xc000, 0xc0000000},
		{"minus zero", 0x8000, 0x80000000},
		{"one third, rounded", 0x3555, 0x3eaaa000},
		{"largest finite 65504", 0x7bff, 0x477fe000},
		{"smallest normal 2^-14", 0x0400, 0x38800000},
		{"smallest subnormal 2^-24", 0x0001, 0x33800000},
		{"negative smallest subnormal", 0x8001, 0xb3800000},
		{"subnormal 3·2^-24", 0x0003, 0x34400000},
		{"largest subnormal 1023·2^-24", 0x03ff, 0x387fc000},
		{"+inf", 0x7c00, 0x7f800000},
		{"-inf", 0xfc00, 0xff800000},
		{"quiet NaN", 0x7e00, 0x7fc00000},
		{"signalling NaN keeps its payload", 0x7c01, 0x7f802000},
	}
	for _, c := range cases {
		if got := math.Float32bits(F16ToFloat32(c.in)); got != c.want {
			t.Errorf("%s: F16ToFloat32(%#04x) = %#08x, want %#08x", c.name, c.in, got, c.want)
		}
	}
}

func TestFloat32ToF16(t *testing.T) {
	cases := []struct {
		name string
		in   uint32
		want uint16
	}{
		{"one", 0x3f800000, 0x3c00},
		{"minus zero", 0x80000000, 0x8000},
		{"65504, the largest finite", 0x477fe000, 0x7bff},
		{"just below 65520 rounds down", 0x477fefff, 0x7bff},
		{"65520 is a tie; odd 0x7bff rounds up to inf", 0x477ff000, 0x7c00},
		{"1e6 overflows", math.Float32bits(1e6), 0x7c00},
		{"-1e6 overflows", math.Float32bits(-1e6), 0xfc00},
		{"tie to even, down (1 + 2^-11)", 0x3f801000, 0x3c00},
		{"tie to even, up (1 + 3·2^-11)", 0x3f803000, 0x3c02},
		{"above the tie", 0x3f801001, 0x3c01},
		{"smallest normal", 0x38800000, 0x0400},
		{"smallest subnormal 2^-24", 0x33800000, 0x0001},
		{"2^-25 is a tie with zero: even is zero", 0x33000000, 0x0000},
		{"1.5·2^-25 rounds up to 2^-24", 0x33400000, 0x0001},
		{"just below 2^-25 rounds to zero", 0x32ffffff, 0x0000},
		{"1.5·2^-24, tie to even (2)", 0x33c00000, 0x0002},
		{"2.5·2^-24, tie to even (2)", 0x34200000, 0x0002},
		{"-2.5·2^-24", 0xb4200000, 0x8002},
		{"1023.5·2^-24 ties up into the smallest normal", 0x387fe000, 0x0400},
		{"1e-8 underflows", math.Float32bits(1e-8), 0x0000},
		{"float32 subnormal underflows", 0x00000001, 0x0000},
		{"+inf", 0x7f800000, 0x7c00},
		{"-inf", 0xff800000, 0xfc00},
		{"quiet NaN", 0x7fc00000, 0x7e00},
		{"NaN with a low payload stays NaN", 0x7f800001, 0x7e00},
		{"negative NaN", 0xffc00000, 0xfe00},
	}
	for _, c := range cases {
		if got := Float32ToF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("%s: Float32ToF16(%#08x) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
}

// Every 16-bit value survives widening and rounding back unchanged (NaNs
// stay NaNs): the conversions are exact inverses on the narrow type.
func TestSixteenBitRoundTripExhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if f := F16ToFloat32(h); f != f {
			if g := Float32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 || g&0x8000 != h&0x8000 {
				t.Fatalf("F16 NaN %#04x came back as %#04x", h, g)
			}
		} else if g := Float32ToF16(f); g != h {
			t.Fatalf("F16 %#04x → %v → %#04x", h, f, g)
		}
		if f := BF16ToFloat32(h); f != f {
			if g := Float32ToBF16(f); g&0x7f80 != 0x7f80 || g&0x7f == 0 || g&0x8000 != h&0x8000 {
				t.Fatalf("BF16 NaN %#04x came back as %#04x", h, g)
			}
		} else if g := Float32ToBF16(f); g != h {
			t.Fatalf("BF16 %#04x → %v → %#04x", h, f, g)
		}
	}
}

// nearestEven rounds f to the nearest of the non-negative values of a
// 16-bit format (all, ascending, index = bit pattern, ending with infinity
// placed where the next finite step would be), ties to the even pattern:
// rounding done the slow way, by search, independently of the bit tricks
// under test.
func nearestEven(f float32, all []float64) uint16 {
	x := math.Abs(float64(f))
	sign := uint16(0)
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	i := sort.SearchFloat64s(all, x) // all[i-1] < x <= all[i]
	if i == len(all) {
		return sign | uint16(len(all)-1) // past the infinity step: infinity
	}
	if all[i] == x || i == 0 {
		return sign | uint16(i)
	}
	lo, hi := x-all[i-1], all[i]-x
	switch {
	case lo < hi:
		return sign | uint16(i-1)
	case hi < lo:
		return sign | uint16(i)
	case (i-1)%2 == 0:
		return sign | uint16(i-1)
	}
	return sign | uint16(i)
}

// Random float32s (uniform over bit patterns, so every exponent is hit) and
// the exact midpoints between neighbours round the same as a search for
// the nearest value.
func TestRoundingAgainstSearch(t *testing.T) {
	var f16, bf16 []float64
	for h := 0; h < 0x7c00; h++ {
		f16 = append(f16, float64(F16ToFloat32(uint16(h))))
	}
	for h := 0; h < 0x7f80; h++ {
		bf16 = append(bf16, float64(BF16ToFloat32(uint16(h))))
	}
	// Infinity stands where the next finite step would be: 2^16 past
	// binary16's 65504, 2^128 past bfloat16's largest.
	f16, bf16 = append(f16, 65536), append(bf16, math.Ldexp(1, 128))
	var inputs []float32
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float32frombits(rng.Uint32())
		if f == f && !math.IsInf(float64(f), 0) {
			inputs = append(inputs, f)
		}
	}
	// Midpoints between neighbours are float32s for both formats.
	for i := 0; i+1 < len(f16); i++ {
		inputs = append(inputs, float32((f16[i]+f16[i+1])/2))
	}
	for i := 0; i+1 < len(bf16); i += 97 {
		inputs = append(inputs, float32((bf16[i]+bf16[i+1])/2), -float32((bf16[i]+bf16[i+1])/2))
	}
	for _, f := range inputs {
		if got, want := Float32ToF16(f), nearestEven(f, f16); got != want {
			t.Fatalf("Float32ToF16(%g = %#08x) = %#04x, the nearest-even search says %#04x", f, math.Float32bits(f), got, want)
		}
		if got, want := Float32ToBF16(f), nearestEven(f, bf16); got != want {
			t.Fatalf("Float32ToBF16(%g = %#08x) = %#04x, the nearest-even search says %#04x", f, math.Float32bits(f), got, want)
		}
	}
}
