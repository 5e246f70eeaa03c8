package safetensors

import "math"

// dtypeSize is the element size in bytes of every dtype the format
// defines. Open accepts all of them, so that a file holding, say, int64
// position ids beside its weights opens and only reading that tensor as
// float32 fails; a name outside this table is a corrupt or foreign file.
var dtypeSize = map[string]int64{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// The dtypes memo converts to and from float32.
const (
	F32  = "F32"
	BF16 = "BF16"
	F16  = "F16"
)

// floatDType reports whether memo converts dtype to and from float32.
func floatDType(dtype string) bool { return dtype == F32 || dtype == BF16 || dtype == F16 }

// BF16ToFloat32 widens a bfloat16 bit pattern: bfloat16 is the top half of
// a float32, so the conversion is exact for every value, NaN payloads
// included.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 rounds f to the nearest bfloat16, ties to even, as
// PyTorch's tensor.to(torch.bfloat16) does. Values past the largest finite
// bfloat16 round to infinity; a NaN stays a NaN of the same sign (its
// quiet bit is set so that truncating the payload cannot make it an
// infinity).
func Float32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return uint16(b>>16) | 0x0040
	}
	// Adding 0x7fff rounds up exactly the low halves above one half; the
	// kept half's lowest bit breaks the tie towards even. A carry out of
	// the mantissa correctly bumps the exponent (up to infinity).
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// f16Table maps every binary16 bit pattern to its float32 value; at 256 KiB
// it turns the per-element conversion into one load.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = math.Float32frombits(f16Bits(uint16(i)))
	}
	return &t
}()

// F16ToFloat32 widens an IEEE binary16 bit pattern; every binary16 value,
// subnormals and NaN payloads included, is exactly a float32.
func F16ToFloat32(h uint16) float32 { return f16Table[h] }

// f16Bits is the float32 bit pattern of binary16 h.
func f16Bits(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // infinity or NaN: keep the payload
		return sign | 0x7f800000 | mant<<13
	case exp != 0: // normal: rebias the exponent from 15 to 127
		return sign | (exp+127-15)<<23 | mant<<13
	case mant == 0:
		return sign
	}
	// Subnormal: mant × 2^-24. Shift the leading one up to the implicit
	// bit position, lowering the exponent once per shift.
	e := uint32(127 - 15 + 1)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return sign | e<<23 | (mant&0x3ff)<<13
}

// Float32ToF16 rounds f to the nearest IEEE binary16, ties to even, as
// PyTorch's tensor.to(torch.float16) does: magnitudes from 65520 up become
// infinity, those below 2^-25 zero, and the range between the smallest
// normal and zero is rounded onto the subnormals. A NaN stays a quiet NaN
// of the same sign.
func Float32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	if exp == 0 { // zero or a float32 subnormal, far below half the smallest binary16
		return sign
	}
	he := exp - 127 + 15 // the binary16 exponent field this value would have
	if he >= 0x1f {
		return sign | 0x7c00
	}
	if he >= 1 {
		h := uint32(he)<<10 | mant>>13
		rest := mant & 0x1fff
		if rest > 0x1000 || rest == 0x1000 && h&1 == 1 {
			h++ // a carry into the exponent is right, up to infinity
		}
		return sign | uint16(h)
	}
	// Subnormal result: the 24-bit significand m = 1.mant is worth
	// m × 2^(exp-127-23), in units of 2^-24 that is m >> (14 - he).
	shift := uint32(14 - he)
	if shift > 24 { // below half the smallest subnormal
		return sign
	}
	m := mant | 0x800000
	h := m >> shift
	rest := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rest > half || rest == half && h&1 == 1 {
		h++ // may reach 0x400, the smallest normal: its encoding is exactly that
	}
	return sign | uint16(h)
}
