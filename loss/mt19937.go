package loss

// mt19937 is the 32-bit Mersenne Twister as PyTorch's CPU generator runs it:
// init_genrand seeding, then the standard tempered output. It exists only to
// rebuild the reference's hash table bit for bit, so it has no other API.
type mt19937 struct {
	state [624]uint32
	next  int
}

func newMT19937(seed uint32) *mt19937 {
	m := &mt19937{next: 624}
	m.state[0] = seed
	for i := 1; i < 624; i++ {
		prev := m.state[i-1]
		m.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	return m
}

func (m *mt19937) twist() {
	const upper, lower, matrixA = 0x80000000, 0x7fffffff, 0x9908b0df
	for i := 0; i < 624; i++ {
		y := (m.state[i] & upper) | (m.state[(i+1)%624] & lower)
		v := m.state[(i+397)%624] ^ (y >> 1)
		if y&1 != 0 {
			v ^= matrixA
		}
		m.state[i] = v
	}
	m.next = 0
}

func (m *mt19937) uint32() uint32 {
	if m.next >= 624 {
		m.twist()
	}
	y := m.state[m.next]
	m.next++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}
