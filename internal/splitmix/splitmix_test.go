package splitmix

import "testing"

// The first outputs of splitmix64.c (Vigna) seeded with 1234567, as its
// reference output lists them: the stream must never change, or every split,
// mask and reference assignment memo ever made would move.
func TestStreamMatchesReference(t *testing.T) {
	want := []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821}
	s := New(1234567)
	for i, w := range want {
		if got := s.Next(); got != w {
			t.Fatalf("value %d = %d, want %d", i, got, w)
		}
	}
}

// From state 0, as Vigna's splitmix64.c prints them.
func TestStreamFromZero(t *testing.T) {
	var s Stream
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := s.Next(); got != want {
			t.Errorf("output %d: %#x, want %#x", i, got, want)
		}
	}
}

func TestMixIsTheStreamsFinaliser(t *testing.T) {
	s := New(42)
	if got, want := s.Next(), Mix(42+Golden); got != want {
		t.Fatalf("Next() = %d, Mix(seed+Golden) = %d", got, want)
	}
}
