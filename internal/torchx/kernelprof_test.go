package torchx

import (
	"runtime"
	"testing"

	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// On the CPU the profile records the operators the calling thread runs:
// a product of two matrices must be among them, once per call.
func TestProfileKernelsRecordsOperators(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a := ts.MustOnes([]int64{64, 64}, gotch.Float, gotch.CPU)
	defer a.MustDrop()
	prof, err := ProfileKernels(false, func() error {
		for range 3 {
			c := a.MustMm(a, false)
			c.MustDrop()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var mm *KernelTime
	for i, k := range prof {
		if k.Name == "aten::mm" {
			mm = &prof[i]
		}
		if i > 0 && prof[i-1].Secs < k.Secs {
			t.Errorf("not sorted by time: %v before %v", prof[i-1], k)
		}
	}
	if mm == nil {
		t.Fatalf("no aten::mm in the profile: %v", prof)
	}
	if mm.Device != "cpu" || mm.Calls != 3 || !(mm.Secs > 0) {
		t.Errorf("aten::mm: %+v, want device cpu, 3 calls, time > 0", *mm)
	}
	if got := prof.DeviceSeconds("cuda"); got != 0 {
		t.Errorf("CUDA time %g on the CPU", got)
	}
	if top := prof.Top("cpu", 1); len(top) != 1 || top[0] != prof[0] {
		t.Errorf("Top(cpu, 1) = %v, want the first entry %v", top, prof[0])
	}
	// A second profile after the first: the profiler was released.
	if _, err := ProfileKernels(false, func() error { return nil }); err != nil {
		t.Errorf("second profile: %v", err)
	}
}

func TestParseKernelProfile(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       KernelProfile
		wantErr    bool
	}{
		{"empty", "", KernelProfile{}, false},
		{"sorted by time", "cuda\tk1\t2\t1000\ncuda\tk2\t1\t5000\n", KernelProfile{{"cuda", "k2", 1, 5e-6}, {"cuda", "k1", 2, 1e-6}}, false},
		{"fields", "cuda\tk1\t2\n", nil, true},
		{"not a number", "cuda\tk1\tx\t10\n", nil, true},
	} {
		got, err := parseKernelProfile(tc.text)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err %v, want error %v", tc.name, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: entry %d %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}
