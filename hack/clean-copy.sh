#!/usr/bin/env bash
# Copies the repository's tracked files (as they are in the working tree) into an empty folder
# with nothing beside it, and runs the given make targets there through hack/phases.sh. It proves
# that a clone anywhere works: nothing a target needs may come from outside the repository
# (a folder beside the clone, an untracked file, a generated file not committed). The folder is
# fixed per source checkout, so the Go build cache still serves later runs; it is emptied first.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
base=${TMPDIR:-/tmp}/grove-clean-copy-$(printf '%s' "$root" | sha256sum | cut -c1-12)
copy="$base/grove"
# Two runs from one checkout would empty each other's copy: the second waits for the first.
exec {lock}>"$base.lock"
if command -v flock >/dev/null; then
  flock -n "$lock" || { echo "clean copy: another run uses $base; waiting for it"; flock "$lock"; }
fi
rm -rf "$base"
mkdir -p "$copy"
(cd "$root" && git ls-files -z --cached) | while IFS= read -r -d '' f; do
  # A tracked file deleted in the working tree is not part of what is being tested.
  if [ -e "$root/$f" ] || [ -L "$root/$f" ]; then printf '%s\0' "$f"; fi
done | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$copy"
echo "clean copy: $(cd "$copy" && find . -type f | wc -l) tracked files in $copy (nothing beside it: $(ls -A "$base" | tr '\n' ' '))"
cd "$copy"
exec hack/phases.sh "$@"
