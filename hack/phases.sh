#!/usr/bin/env bash
# Runs the given make targets in order, stops at the first failure, and prints how long each took
# (CI's log shows where the time goes on a cold machine).
set -uo pipefail
summary=()
status=0
total_start=$SECONDS
for target in "$@"; do
  start=$SECONDS
  echo "=== phase $target"
  if make --no-print-directory "$target"; then
    summary+=("$(printf '%-18s %5ss  ok' "$target" $((SECONDS - start)))")
  else
    status=$?
    summary+=("$(printf '%-18s %5ss  FAILED' "$target" $((SECONDS - start)))")
    break
  fi
done
echo "=== phase timings"
printf '%s\n' "${summary[@]}"
printf '%-18s %5ss\n' total $((SECONDS - total_start))
exit $status
