#!/usr/bin/env bash
# Checks that the pinned tools make run-local builds (hack/tools/{cluster,kwok,jobset}) compile
# every library they share with the project at the project's version. Go reuses a compiled package
# only when its module versions match, so on a cold machine one mismatch deep in the graph
# (golang.org/x/sys, say) makes a tool compile its own copy of client-go again: minutes on 2 cores.
# Prints each module a tool and the project both compile at different versions, with the fix.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
export LC_ALL=C
# Go keys a compiled package by its module's required version, so a module replaced by another
# version (k8s.io/kubernetes requires its staging modules at v0.0.0) shows both and never matches.
fmt='{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}}{{if ne .Version $.Module.Version}}=>{{.Version}}{{end}}{{end}}{{end}}'

compiled() { go list -trimpath -deps -f "$fmt" "$@" | sort -u; }

project=$(cd "$root" && compiled ./cmd/... ./hack/run-local)
status=0
check() {
  local dir=$1; shift
  local tool
  tool=$(cd "$root/hack/tools/$dir" && compiled "$@")
  local diff
  diff=$(join <(echo "$tool") <(echo "$project") | awk '$2 != $3')
  if [ -n "$diff" ]; then
    echo "hack/tools/$dir compiles these modules at other versions than the project (tool, project):"
    echo "$diff" | sed 's/^/  /'
    echo "  fix: in hack/tools/$dir, go get each at the project's version (or the project's up to the tool's), then go mod tidy"
    status=1
  fi
}

check cluster go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
check kwok sigs.k8s.io/kwok/cmd/kwok
check jobset sigs.k8s.io/jobset
exit "$status"
