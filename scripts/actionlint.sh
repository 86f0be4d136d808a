#!/usr/bin/env bash
# Lints every workflow in .github/workflows with actionlint, built once from the Go module
# proxy and cached by version outside the source tree; their shell steps go through
# through ShellCheck, which must be installed (tests/run.sh installs it from Debian).
#   bash scripts/actionlint.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=v1.7.12
bin=${COORD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-coord}/tools/actionlint-$version
if [[ ! -x $bin/actionlint ]]; then
  echo "[actionlint] building actionlint $version from the Go module proxy" >&2
  GOBIN=$bin go install "github.com/rhysd/actionlint/cmd/actionlint@$version" >&2
fi
cd "$root"
command -v shellcheck >/dev/null || { echo "[actionlint] shellcheck is not installed" >&2; exit 1; }
"$bin/actionlint" -no-color .github/workflows/*.yml
echo "actionlint $version: $(ls .github/workflows/*.yml | wc -l) workflows pass"
