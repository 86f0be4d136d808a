#!/usr/bin/env bash
# Builds the release archive for one platform, the same way for a release job and for a
# local run, and renders the krew manifest (krew-manifest.yaml) for the archives in OUTDIR:
#   scripts/package.sh [--target TRIPLE] [OUTDIR]   (default: this machine's triple; dist/)
# Linux (gnu) targets are built with cargo-zigbuild against glibc 2.17 (scripts/zig-tools.sh),
# so the binary starts on every distribution from RHEL 7 and Ubuntu 14.04 on; other targets
# with cargo build. The archive, named as the manifest expects, holds the plugin, its
# completion launcher and LICENSE at its root (a .zip on Windows, a .tar.gz elsewhere) with
# fixed owners and times: the same binaries give the same archive.
# Prints the manifest path, then the archive path.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=
while (($#)); do
  case $1 in
    --target) target=$2; shift 2 ;;
    -*) echo "usage: $0 [--target TRIPLE] [OUTDIR]" >&2; exit 2 ;;
    *) break ;;
  esac
done
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
cd "$root"
[[ -n $target ]] || target=$(rustc -vV | sed -n 's/^host: //p')
version=v$(awk -F'"' '/^version = / {print $2; exit}' Cargo.toml)
glibc=2.17
# Windows runners name it python.
py=$(command -v python3 || command -v python)

case $target in
  x86_64-*) arch=amd64 ;;
  aarch64-*) arch=arm64 ;;
  *) echo "package.sh: no krew arch for $target" >&2; exit 2 ;;
esac
case $target in
  *-linux-gnu) os=linux exe='' ext=tar.gz ;;
  *-apple-darwin) os=darwin exe='' ext=tar.gz ;;
  *-windows-*) os=windows exe=.exe ext=zip ;;
  *) echo "package.sh: no krew os for $target" >&2; exit 2 ;;
esac

if [[ $os == linux ]]; then
  # Assigned first: `eval "$(...)"` alone would hide a failed install behind eval's status.
  tools=$(bash scripts/zig-tools.sh)
  eval "$tools"
  cargo zigbuild --locked --release --bins --target "$target.$glibc" >&2
else
  cargo build --locked --release --bins --target "$target" >&2
fi
built=target/$target/release
archive="$out/kubectl-coord-$version-$os-$arch.$ext"
"$py" - "$archive" "$built/kubectl-coord$exe" "$built/kubectl_complete-coord$exe" LICENSE <<'PY'
import os, sys, tarfile, zipfile
archive, *files = sys.argv[1:]
if archive.endswith(".zip"):
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for f in files:
            info = zipfile.ZipInfo(os.path.basename(f), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if os.access(f, os.X_OK) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, open(f, "rb").read())
else:
    with tarfile.open(archive, "w:gz", compresslevel=9) as t:
        for f in files:
            info = t.gettarinfo(f, os.path.basename(f))
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            info.mode = 0o755 if os.access(f, os.X_OK) else 0o644
            t.addfile(info, open(f, "rb"))
PY
manifest="$out/coord.yaml"
"$py" scripts/render-manifest.py krew-manifest.yaml "$manifest" "$out" "$version"
echo "$manifest"
echo "$archive"
