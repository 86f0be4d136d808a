#!/usr/bin/env bash
# Installs (once, cached by version outside the source tree) what builds Linux binaries
# that run on glibc 2.17 and later: zig from PyPI (the ziglang package) and cargo-zigbuild
# from crates.io. Prints two lines for the caller to eval, assigned first so that a failed
# install stops the caller under `set -e` (eval "$(...)" would hide it):
#   tools=$(bash scripts/zig-tools.sh); eval "$tools"
# They put cargo-zigbuild on PATH and point it at that zig (CARGO_ZIGBUILD_ZIG_PATH).
set -euo pipefail
zig_version=0.14.1
zigbuild_version=0.24.1
cache=${COORD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-coord}/tools
zig_dir=$cache/ziglang-$zig_version
zigbuild_dir=$cache/cargo-zigbuild-$zigbuild_version
if [[ ! -x $zig_dir/ziglang/zig ]]; then
  echo "[zig-tools] installing ziglang $zig_version from PyPI into $zig_dir" >&2
  rm -rf "$zig_dir.tmp"
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --target "$zig_dir.tmp" "ziglang==$zig_version" >&2
  rm -rf "$zig_dir" && mv "$zig_dir.tmp" "$zig_dir"
fi
if [[ ! -x $zigbuild_dir/bin/cargo-zigbuild ]]; then
  echo "[zig-tools] installing cargo-zigbuild $zigbuild_version from crates.io into $zigbuild_dir" >&2
  cargo install --quiet --locked --version "$zigbuild_version" --root "$zigbuild_dir" cargo-zigbuild >&2
fi
echo "export PATH=\"$zigbuild_dir/bin:\$PATH\""
echo "export CARGO_ZIGBUILD_ZIG_PATH=\"$zig_dir/ziglang/zig\""
