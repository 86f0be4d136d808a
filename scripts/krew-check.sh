#!/usr/bin/env bash
# Packages the plugin (for glibc 2.17, scripts/package.sh), checks that the packed binaries
# need no newer glibc and that the archive stays within 8 MB, validates the manifest with
# the real validate-krew-manifest,
# installs it offline with real krew into a throwaway KREW_ROOT, and runs
# `kubectl coord version` through kubectl against the cluster in DIR.
#   scripts/krew-check.sh CLUSTER_DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cluster=$(cd "$1" && pwd)
bin="$cluster/bin"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The template lives under the name the design gives it, krew-manifest.yaml, and the release
# workflow hands that path to krew-release-bot, whose own default is .krew.yaml.
template=krew-manifest.yaml
[[ -f $root/$template && ! -e $root/.krew.yaml ]] || { echo "the krew template must be $template alone" >&2; exit 1; }
grep -Eq "^ +krew_template_file: $template\$" "$root/.github/workflows/release.yml" \
  || { echo "release.yml does not give krew-release-bot krew_template_file: $template" >&2; exit 1; }
mapfile -t made < <(bash "$root/scripts/package.sh" "$work/dist")
manifest=${made[0]} archive=${made[1]}
# validate-krew-manifest requires the file's base name to equal metadata.name.
[[ $(basename "$manifest") == coord.yaml ]]
"$bin/validate-krew-manifest" -manifest "$manifest" -skip-install
tar -tzf "$archive" | sort | tr '\n' ' ' | grep -qx 'LICENSE kubectl-coord kubectl_complete-coord ' \
  || { echo "archive must hold exactly the plugin, its completion executable and LICENSE" >&2; exit 1; }
bytes=$(wc -c <"$archive")
echo "archive: $(basename "$archive"), $bytes bytes"
(( bytes <= 8000000 )) || { echo "the archive is over 8 MB (8,000,000 bytes): $bytes bytes" >&2; exit 1; }
# The newest GLIBC_ symbol version each packed binary needs: at most 2.17, so that it starts on
# RHEL 7/8, Amazon Linux 2 and Ubuntu 20.04 bastions.
mkdir "$work/unpacked" && tar -C "$work/unpacked" -xzf "$archive"
for b in kubectl-coord kubectl_complete-coord; do
  newest=$(objdump -T "$work/unpacked/$b" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  [[ -n $newest ]] || { echo "$b: no GLIBC_ symbol versions found (is it dynamically linked?)" >&2; exit 1; }
  echo "$b needs glibc $newest"
  [[ $(printf '%s\n' "$newest" 2.17 | sort -V | tail -1) == 2.17 ]] \
    || { echo "$b needs GLIBC_$newest, newer than 2.17" >&2; exit 1; }
done
export KREW_ROOT="$work/krew" KREW_NO_UPGRADE_CHECK=1
PATH="$bin:/usr/bin:/bin" "$bin/kubectl-krew" install --no-update-index --manifest "$manifest" --archive "$archive" </dev/null
[[ -x $KREW_ROOT/bin/kubectl-coord ]] || { echo "krew did not install kubectl-coord" >&2; exit 1; }
out=$(PATH="$KREW_ROOT/bin:$bin:/usr/bin:/bin" KUBECONFIG="$cluster/viewer.kubeconfig" kubectl coord version)
echo "$out"
grep -q '^Server Version: v1.36.3$' <<<"$out"
grep -q '^User: *coord-viewer$' <<<"$out"
# krew links only the plugin's bin into $KREW_ROOT/bin; the completion executable lives
# in the plugin's store directory, from where users link it onto PATH (docs/flags.md, Completion).
store=$(dirname "$(readlink -f "$KREW_ROOT/bin/kubectl-coord")")
[[ -x $store/kubectl_complete-coord ]] || { echo "krew did not install kubectl_complete-coord" >&2; exit 1; }
ln -s "$store/kubectl_complete-coord" "$work/kubectl_complete-coord"
completions=$(PATH="$KREW_ROOT/bin:$work:$bin:/usr/bin:/bin" KUBECONFIG="$cluster/viewer.kubeconfig" kubectl __complete coord tr 2>/dev/null)
grep -q '^trace' <<<"$completions" || { echo "kubectl __complete coord tr did not offer trace: $completions" >&2; exit 1; }
echo "krew check passed: validated, installed offline into a throwaway KREW_ROOT, found by kubectl, completion through kubectl __complete"
