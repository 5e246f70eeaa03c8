package main

import "testing"

func TestRunsModels(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"run", "exp/smoke.toml"}, true},
		{[]string{"--log-level", "debug", "bench", "train"}, true},
		{[]string{"--log-level=debug", "extract", "runs/x"}, true},
		{[]string{"run", "--help"}, false},
		{[]string{"help", "run"}, false},
		{[]string{"config", "--defaults"}, false},
		{[]string{"--log-level", "run"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := runsModels(tt.args); got != tt.want {
			t.Errorf("runsModels(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
