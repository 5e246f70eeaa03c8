package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSupportedVersion(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"1.13.1+dfsg-4", true},
		{"2.0.1", false},
		{"2.1.0+cu121", true},
		{"2.11.0+cu130", true},
		{"2.12.0", false},
		{"/opt/libtorch", false},
	} {
		if got := supportedVersion(tt.v); got != tt.want {
			t.Errorf("supportedVersion(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

// fakeTorch lays out the files findLibtorch reads in a pip-style torch
// package directory.
func fakeTorch(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFindLibtorchPip(t *testing.T) {
	const torchH = "include/torch/csrc/api/include/torch/torch.h"
	tests := []struct {
		name                string
		files               map[string]string
		version, abi        string
		cuda, gloo, wantErr bool
	}{
		{name: "cuda, cxx11 ABI, no gloo", files: map[string]string{
			torchH:                                "",
			"version.py":                          "__version__ = '2.11.0+cu130'\ngit_version = 'x'\n",
			"lib/libtorch_cuda.so":                "",
			"share/cmake/Torch/TorchConfig.cmake": `set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")`,
		}, version: "2.11.0+cu130", cuda: true},
		{name: "cpu, old ABI, gloo shipped", files: map[string]string{
			torchH:                  "",
			"include/gloo/config.h": "",
			"include/torch/csrc/api/include/torch/version.h": "#define TORCH_VERSION_MAJOR 2\n#define TORCH_VERSION_MINOR 1\n#define TORCH_VERSION_PATCH 2\n",
			"share/cmake/Torch/TorchConfig.cmake":            `set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=0")`,
		}, version: "2.1.2", abi: "0", gloo: true},
		{name: "not a libtorch", files: map[string]string{"version.py": ""}, wantErr: true},
		{name: "no ABI evidence", files: map[string]string{torchH: ""}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lt, err := findLibtorch(fakeTorch(t, tt.files))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if lt.version != tt.version || lt.cxxABI != tt.abi || lt.cuda != tt.cuda || lt.gloo != tt.gloo {
				t.Errorf("got version %q abi %q cuda %v gloo %v, want %q %q %v %v", lt.version, lt.cxxABI, lt.cuda, lt.gloo, tt.version, tt.abi, tt.cuda, tt.gloo)
			}
			ld := strings.Join(lt.ldflags(), " ")
			if tt.cuda && !strings.Contains(ld, "-Wl,--push-state,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--pop-state") {
				t.Errorf("CUDA libraries not kept under --as-needed: %s", ld)
			}
			cpp := strings.Join(lt.cppflags(), " ")
			if strings.Contains(cpp, "_GLIBCXX_USE_CXX11_ABI") != (tt.abi == "0") {
				t.Errorf("cppflags %q for ABI %q", cpp, tt.abi)
			}
		})
	}
}

// TestDebianShimFlags pins the flags of a build against Debian's libtorch
// 1.13: they (and so the binary) must not change with the support for
// other libtorch installations.
func TestDebianShimFlags(t *testing.T) {
	if _, err := os.Stat("/usr/include/torch/csrc/api/include/torch/torch.h"); err != nil {
		t.Skip("Debian's libtorch-dev is not installed")
	}
	lt, err := findLibtorch("")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "flags.go")
	if err := writeShimFlags(out, lt); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out)
	want := "// #cgo CPPFLAGS: -I/usr/include -I/usr/include/torch/csrc/api/include"
	if lt.gloo {
		want += " -DUSE_C10D_GLOO"
	}
	want += "\n// #cgo CXXFLAGS: -std=c++17 -O2 -w\n// #cgo LDFLAGS: -ltorch -ltorch_cpu -lc10 -lstdc++\n"
	if !strings.Contains(string(got), want) {
		t.Errorf("Debian flags changed:\n%s\nwant them to contain:\n%s", got, want)
	}
}
