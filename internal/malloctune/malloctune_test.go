package malloctune

import (
	"slices"
	"testing"
)

func TestEnvironment(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    []string
		changed bool
	}{
		{"adds the variable", []string{"HOME=/root"}, []string{"HOME=/root", "GLIBC_TUNABLES=" + Tunables, appliedEnv + "=" + Tunables}, true},
		{"extends the user's tunables", []string{"GLIBC_TUNABLES=glibc.cpu.x86_ibt=off"},
			[]string{"GLIBC_TUNABLES=glibc.cpu.x86_ibt=off:" + Tunables, appliedEnv + "=glibc.cpu.x86_ibt=off:" + Tunables}, true},
		{"restarted: the loader's shortened value is restored, no second restart",
			[]string{"GLIBC_TUNABLES=glibc.cpu.x86_ibt=off", appliedEnv + "=glibc.cpu.x86_ibt=off:" + Tunables},
			[]string{"GLIBC_TUNABLES=glibc.cpu.x86_ibt=off:" + Tunables, appliedEnv + "=glibc.cpu.x86_ibt=off:" + Tunables}, false},
		{"user's own threshold wins", []string{"GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1024"},
			[]string{"GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1024"}, false},
		{"opted out", []string{OptOutEnv + "=1"}, []string{OptOutEnv + "=1"}, false},
		{"empty opt-out is no opt-out", []string{OptOutEnv + "="}, []string{OptOutEnv + "=", "GLIBC_TUNABLES=" + Tunables, appliedEnv + "=" + Tunables}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.env)
			got, changed := Environment(tt.env)
			if changed != tt.changed || !slices.Equal(got, tt.want) {
				t.Fatalf("Environment(%q) = %q, %v; want %q, %v", tt.env, got, changed, tt.want, tt.changed)
			}
			if !slices.Equal(in, tt.env) {
				t.Fatalf("input environment modified: %q", tt.env)
			}
		})
	}
}
