package train

import "testing"

func TestRankDevice(t *testing.T) {
	for _, tc := range []struct {
		device      string
		local, gpus int
		want        string
		shared      bool
	}{
		{"cuda", 0, 1, "cuda:0", false},
		{"cuda", 1, 1, "cuda:0", true}, // two ranks, one GPU
		{"cuda", 1, 2, "cuda:1", false},
		{"cuda", 2, 2, "cuda:0", true},
		{"cuda", 3, 2, "cuda:1", true},
		{"CUDA", 5, 4, "cuda:1", true},
		{"cuda:1", 0, 2, "cuda:1", false}, // named: every rank's
		{"cuda:0", 3, 1, "cuda:0", false},
		{"cpu", 3, 2, "cpu", false},
		{"", 1, 2, "", false},
		{"cuda", 1, 0, "cuda", false}, // no GPU: ResolveDevice says so
	} {
		got, shared := RankDevice(tc.device, tc.local, tc.gpus)
		if got != tc.want || shared != tc.shared {
			t.Errorf("RankDevice(%q, local %d, %d GPUs) = %q, %v; want %q, %v", tc.device, tc.local, tc.gpus, got, shared, tc.want, tc.shared)
		}
	}
}
