#!/usr/bin/env bash
# Builds the release archive for the current platform and renders a krew
# manifest for it with the archive's real sha256.
#   scripts/package.sh [OUTDIR]   (default dist/)
# Prints the manifest path, then the archive path. The rendered manifest keeps
# only the platforms whose archives were built here; a release job that builds
# every platform's archive into OUTDIR renders them all.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
cd "$root"
version=v$(awk -F'"' '/^version = / {print $2; exit}' Cargo.toml)
grep -q "version: $version" krew-manifest.yaml || { echo "krew-manifest.yaml does not say version $version" >&2; exit 1; }
os=$(uname -s | tr '[:upper:]' '[:lower:]')
case $(uname -m) in x86_64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac

cargo build --locked --release --bins >&2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp target/release/kubectl-coord target/release/kubectl_complete-coord LICENSE "$stage/"
archive="$out/kubectl-coord-$version-$os-$arch.tar.gz"
# Regular files only, fixed owner and mtime: the same binary gives the same archive.
tar -C "$stage" --owner=0 --group=0 --numeric-owner --mtime=1970-01-01 -czf "$archive" kubectl-coord kubectl_complete-coord LICENSE

manifest="$out/coord.yaml"
python3 - "$root/krew-manifest.yaml" "$manifest" "$out" <<'PY'
import hashlib, os, re, sys
src, dst, out = sys.argv[1:]
text = open(src).read()
head, _, body = text.partition("  platforms:\n")
blocks = re.split(r"(?m)^(?=  - selector:)", body)
kept = []
for block in blocks:
    m = re.search(r'"@SHA256_(\w+?)_(\w+)@"', block)
    if not m:
        continue
    name = re.search(r"uri: \S+/(\S+)$", block, re.M).group(1)
    path = os.path.join(out, name)
    if os.path.exists(path):
        digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
        kept.append(block.replace(m.group(0), digest))
if not kept:
    sys.exit("no archive for any platform in " + out)
open(dst, "w").write(head + "  platforms:\n" + "".join(kept))
PY
echo "$manifest"
echo "$archive"
