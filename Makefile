# The README's two commands run `bash scripts/setup.sh` first, then `make run`
# or `make test`. Every target assumes setup has run (go.work exists).
GO ?= go
DEFAULT_EXPERIMENT ?= exp/goldfish-vs-standard.toml

.PHONY: all build run test test-short lint vet bench soak fuzz clean

all: build

# The revision memo --version and manifest.json name: a workspace build
# (go.work) carries no VCS stamp of its own.
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
REVISION := $(if $(REVISION),$(REVISION)$(shell git diff --quiet HEAD -- 2>/dev/null || echo +modified))

build:
	$(GO) build -ldflags "-X github.com/memo-research/memo/experiments.builtRevision=$(REVISION)" -o bin/memo ./cmd/memo

# run builds memo and runs the default experiment end to end into runs/.
# Where OPENBLAS_CORETYPE is unset and the CPU has AVX2 and FMA, it asks
# OpenBLAS for its Haswell kernel, the one the README's table was made
# with: the table then comes out the same bit for bit on any such x86 CPU,
# where OpenBLAS's own choice (manifest.json's machine.kernels.blas_core)
# can move a RougeL's third decimal.
run: build
	@if [ -z "$$OPENBLAS_CORETYPE" ] && grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo; then \
		echo "make run: OPENBLAS_CORETYPE=Haswell, the README table's BLAS kernel"; export OPENBLAS_CORETYPE=Haswell; fi; \
		./bin/memo run $(DEFAULT_EXPERIMENT)

vet:
	$(GO) vet ./...

# lint fails on any file gofmt would change, on go vet and on staticcheck
# (its default checks, at the version scripts/setup.sh pins).
STATICCHECK ?= .build/bin/staticcheck
lint: vet
	@unformatted=$$(gofmt -l $$(find . \( -name '.?*' -o -name runs -o -name gpucarry \) -prune -o -name '*.go' -print)); \
		if [ -n "$$unformatted" ]; then echo "gofmt -w these files:"; echo "$$unformatted"; exit 1; fi
	@test -x $(STATICCHECK) || { echo "no $(STATICCHECK): run bash scripts/setup.sh"; exit 1; }
	$(STATICCHECK) ./...

# test is what CI runs: lint, then the whole suite.
test: lint
	$(GO) test -count=1 -timeout 40m ./...

test-short: vet
	$(GO) test -short -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

# soak is the 3,000-step memory soak of the training loop (a few minutes).
soak:
	MEMO_SOAK=1 $(GO) test -count=1 -run Soak -v -timeout 30m ./train/

# fuzz runs each fuzzer of the file readers (and of the spec and tokenizer.json parsers) for FUZZTIME (their seed corpora
# and any input that once failed, in testdata/fuzz, also run in `make test`).
# A failing input is written to the package's testdata/fuzz/<Fuzzer>/.
FUZZTIME ?= 1m
# The fuzzer minimizes every new input before it counts on; a short budget
# keeps the time for fuzzing.
FUZZFLAGS ?= -fuzzminimizetime=5s
# Every Fuzz function in the tree, as PACKAGE:NAME: a list written by hand
# went stale when a fuzzer moved, and `go test -fuzz` matching nothing
# passes.
FUZZERS = $(shell grep -r --include='*_test.go' --exclude-dir=.build --exclude-dir=runs -o '^func Fuzz[A-Za-z0-9]*' . \
	| sed -E 's#^(.*)/[^/]*_test.go:func (Fuzz.*)#\1:\2#' | sort)
fuzz:
	@failed=""; log=$$(mktemp); for f in $(FUZZERS); do \
		echo "== $${f#*:} ($${f%%:*}, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${f#*:}$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) "$${f%%:*}" > $$log 2>&1; rc=$$?; \
		grep -v '^fuzz: elapsed' $$log; grep '^fuzz: elapsed' $$log | tail -1; \
		if grep -q "no fuzz tests to fuzz" $$log; then failed="$$failed $${f#*:}(not-found)"; fi; \
		if [ $$rc -ne 0 ]; then \
			if grep -q "Failing input written" $$log || ! grep -q "context deadline exceeded" $$log; then \
				failed="$$failed $${f#*:}"; \
			else \
				echo "($${f#*:}: the time ran out while an input was being minimized, which Go reports as a failure; no failing input)"; \
			fi; \
		fi; \
	done; rm -f $$log; test -z "$$failed" || { echo "failed:$$failed"; exit 1; }

clean:
	rm -rf bin .build go.work go.work.sum internal/torchx/flags_generated.go
