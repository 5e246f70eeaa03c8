package loss

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		enabled bool
		wantErr string // substring; "" = valid
	}{
		{"default", DefaultConfig(), true, ""},
		{"standard loss by k=0", Config{Strategy: StrategyHashTable, K: 0, H: 13}, false, ""},
		{"none ignores k", Config{Strategy: StrategyNone, K: 1}, false, ""},
		{"k=1", Config{Strategy: StrategyHashTable, K: 1, H: 13}, false, "goldfish.k = 1: must be 0 (standard loss) or >= 2"},
		{"negative k", Config{Strategy: StrategyStatic, K: -3}, false, "goldfish.k = -3"},
		{"unknown strategy", Config{Strategy: "hash", K: 4, H: 13}, false, `goldfish.strategy = "hash": must be one of none, static, hash-table`},
		{"empty strategy", Config{K: 4, H: 13}, false, `goldfish.strategy = ""`},
		{"h=0 hash-table", Config{Strategy: StrategyHashTable, K: 4}, false, "goldfish.h = 0: must be >= 1"},
		{"h=0 avalanche", Config{Strategy: StrategyHashAvalanche, K: 4}, false, "goldfish.h = 0"},
		{"h=0 rolling", Config{Strategy: StrategyRolling, K: 4}, false, "goldfish.h = 0"},
		{"h=1 ok", Config{Strategy: StrategyHashTable, K: 2, H: 1}, true, ""},
		{"static needs no h", Config{Strategy: StrategyStatic, K: 4, Start: 3}, true, ""},
		{"static negative start", Config{Strategy: StrategyStatic, K: 4, Start: -1}, false, "goldfish.start = -1: must be >= 0"},
		{"random", Config{Strategy: StrategyRandom, K: 8, Seed: -5}, true, ""},
		{"rolling with exempt", Config{Strategy: StrategyRolling, K: 4, H: 13, ExemptIDs: []int32{0, 50256}}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if got := tt.cfg.Enabled(); got != tt.enabled {
					t.Errorf("Enabled = %v, want %v", got, tt.enabled)
				}
				if _, err := New(tt.cfg); err != nil {
					t.Errorf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
			if _, err := New(tt.cfg); err == nil {
				t.Errorf("New accepted an invalid config")
			}
		})
	}
}

func TestDisabledKeepsEverything(t *testing.T) {
	for _, cfg := range []Config{{Strategy: StrategyNone}, {Strategy: StrategyHashTable, K: 0, H: 13}} {
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		dropped := []bool{true, true, true, true}
		m.Mask([]int32{0, 0, 0, 0}, dropped)
		if len(positions(dropped)) != 0 {
			t.Errorf("%+v dropped %v", cfg, positions(dropped))
		}
	}
}

func TestConfigTOML(t *testing.T) {
	cfg := DefaultConfig()
	doc := "strategy = \"rolling\"\nk = 8\nh = 6\nstart = 2\nseed = -7\nexempt_ids = [0, 50256]\n"
	if err := toml.NewDecoder(strings.NewReader(doc)).DisallowUnknownFields().Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	want := Config{Strategy: StrategyRolling, K: 8, H: 6, Start: 2, Seed: -7, ExemptIDs: []int32{0, 50256}}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("decoded %+v, want %+v", cfg, want)
	}
}
