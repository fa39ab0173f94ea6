#!/usr/bin/env bash
# Builds the pinned tools and control-plane binaries from the nested Go modules under
# hack/tools/, into a cache outside the clone keyed by each module's pinned versions, and links
# them into bin/tools/. Warm runs only check that the cached binaries exist.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${GROVE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubegrove/tools}
link_dir="$root/bin/tools"
mkdir -p "$cache" "$link_dir"

# group DIR LDFLAGS NAME=PACKAGE...: builds one tools module's binaries if any is missing.
group() {
  local dir=$1 ldflags=$2; shift 2
  local key out lock missing=() names=() pkgs=()
  # The key covers the module's own sources too (kubeflow-render is a main package of ours).
  # Tools are run, never debugged: -s -w leaves out the symbol table and DWARF, which shortens
  # the links of Kubernetes' large binaries (the key covers the flags).
  ldflags="-s -w $ldflags"
  key=$( (cat "$root/hack/tools/$dir/go.mod" "$root/hack/tools/$dir/go.sum"; find "$root/hack/tools/$dir" -name '*.go' | sort | xargs -r cat; go env GOVERSION; echo "$ldflags ${GOFLAGS:-}") | sha256sum | cut -c1-12)
  out="$cache/$dir-$key"
  # Concurrent runs (two terminals, two test tiers) wait for one build of a module instead of
  # each building it: on 2 cores three cold builds side by side took three times as long.
  exec {lock}>"$cache/.$dir.lock"
  if command -v flock >/dev/null && ! flock -n "$lock"; then
    echo "tools: waiting for another build of hack/tools/$dir"
    flock "$lock"
  fi
  for spec in "$@"; do
    names+=("${spec%%=*}"); pkgs+=("${spec#*=}")
    [ -x "$out/${spec%%=*}" ] || missing+=("$spec")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local start=$SECONDS
    echo "tools: building ${names[*]} (hack/tools/$dir) into $out"
    local tmp
    tmp=$(mktemp -d "$cache/.build.XXXXXX")
    # One go build for all of a module's binaries: it compiles their shared packages once and
    # links them in parallel. go names each binary after its package (default_name); each is
    # then renamed to its tool name.
    local specs_pkgs=()
    for spec in "${missing[@]}"; do specs_pkgs+=("${spec#*=}"); done
    (cd "$root/hack/tools/$dir" && go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${specs_pkgs[@]}")
    for spec in "${missing[@]}"; do
      mv -f "$tmp/$(default_name "${spec#*=}")" "$tmp/${spec%%=*}.tool"
    done
    # A rename per binary keeps concurrent or interrupted builds from leaving a half-written tool.
    mkdir -p "$out" && for spec in "${missing[@]}"; do mv -f "$tmp/${spec%%=*}.tool" "$out/${spec%%=*}"; done && rm -rf "$tmp"
    local built=()
    for spec in "${missing[@]}"; do built+=("${spec%%=*}"); done
    for n in "${built[@]}"; do
      echo "tools: $n built (hack/tools/$dir: ${built[*]} in one build of $((SECONDS - start))s)"
    done
  fi
  for n in "${names[@]}"; do ln -sfn "$out/$n" "$link_dir/$n"; done
  exec {lock}>&-
}

# default_name is the file go build -o DIR/ writes for a main package: its last path element, or
# the one before a major-version suffix (go.etcd.io/etcd/server/v3 → server).
default_name() {
  local pkg=${1%/} last
  last=${pkg##*/}
  if [[ $last =~ ^v[0-9]+$ ]]; then
    pkg=${pkg%/*}
    last=${pkg##*/}
  fi
  echo "$last"
}

k8s_version=v1.37.2
k8s_ldflags=""
for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  k8s_ldflags+=" -X $p.gitVersion=$k8s_version -X $p.gitMajor=1 -X $p.gitMinor=37 -X $p.gitTreeState=clean"
done
# scheduler-plugins v0.35.4-devel builds against k8s.io/kubernetes v1.35.4, so its binary reports that version.
plugins_k8s_version=v1.35.4
plugins_ldflags=""
for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  plugins_ldflags+=" -X $p.gitVersion=$plugins_k8s_version -X $p.gitMajor=1 -X $p.gitMinor=35 -X $p.gitTreeState=clean"
done

# Arguments name the groups to build (all of them without any): make run-local builds only what
# the local run starts, so a first run does not wait for the tools of the tests and the bench.
groups=" ${*:-all} "
want() { [[ $groups == *" all "* || $groups == *" $1 "* ]]; }
for g in ${*:-}; do
  case $g in
    all | cluster | kubectl | gen | lint | kwok | jobset | kueue | kubeflow | lws | plugins | prometheus) ;;
    *) echo "tools: no tool group $g (cluster kubectl gen lint kwok jobset kueue kubeflow lws plugins prometheus)" >&2; exit 2 ;;
  esac
done

# Kubernetes' own binaries are the longest build; on a cold machine the other tools build beside
# them in a second lane, so one lane's downloads and single-threaded links overlap the other's
# compiles (2 cores: ~17 min one after another).
lane_control_plane() {
  if want cluster; then
    group cluster "$k8s_ldflags" \
      etcd=go.etcd.io/etcd/server/v3 \
      kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
      kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
      kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler
  fi
  if want kubectl; then
    # Its own group, from the same module: make run-local applies its samples without it, and
    # its packages (kustomize's among them) are a large share of a cold build.
    group cluster "$k8s_ldflags" kubectl=k8s.io/kubernetes/cmd/kubectl
  fi
  if want prometheus; then
    # Prometheus 3.16 (module v0.316.0) and promtool, for the monitoring e2e and make run-local
    # MONITORING=1: they scrape static targets only, so every service discovery is left out.
    GOFLAGS="${GOFLAGS:+$GOFLAGS }-tags=remove_all_sd" group prometheus \
      "-X github.com/prometheus/common/version.Version=3.16.0" \
      prometheus=github.com/prometheus/prometheus/cmd/prometheus \
      promtool=github.com/prometheus/prometheus/cmd/promtool
  fi
  if want plugins; then
    group plugins "$plugins_ldflags" scheduler-plugins=sigs.k8s.io/scheduler-plugins/cmd/scheduler
  fi
}

lane_tools() {
  if want gen; then
    group gen "" \
      controller-gen=sigs.k8s.io/controller-tools/cmd/controller-gen \
      kustomize=sigs.k8s.io/kustomize/kustomize/v5
  fi
  if want lint; then
    group lint "" golangci-lint=github.com/golangci/golangci-lint/v2/cmd/golangci-lint
  fi
  if want kwok; then
    group kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=v0.8.0" kwok=sigs.k8s.io/kwok/cmd/kwok
  fi
  if want jobset; then
    group jobset "" jobset-controller=sigs.k8s.io/jobset
  fi
  if want kueue; then
    # v0.17.0, not v0.15.0: its TrainJob integration speaks Kubeflow Trainer's v2.2+ API
    # (runtimePatches), which this project serves; v0.15.0's would strip runtimePatches.
    group kueue "-X sigs.k8s.io/kueue/pkg/version.GitVersion=v0.17.0" kueue=sigs.k8s.io/kueue/cmd/kueue
  fi
  if want kubeflow; then
    # Kubeflow Trainer v2.3.0's own runtime framework, which tests compare TrainJob workloads with,
    # and its Helm chart rendered by Helm's engine (the runtimes the chart installs).
    # Its controller manager is a peer make bench compares the trainer-controller with.
    group kubeflow "" kubeflow-render=./render kubeflow-chart=./chart \
      kubeflow-trainer-controller-manager=github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
  fi
  if want lws; then
    # LeaderWorkerSet v0.9.0, a peer make bench compares the operators with; after kubeflow, whose
    # Kubernetes and controller-runtime versions it shares, so their packages compile once.
    group lws "" lws-controller=sigs.k8s.io/lws/cmd
  fi
}

# Each lane is its own process group (set -m), so an interrupt or a TERM ends every go build and
# compiler under it: a backgrounded job in a script otherwise ignores Ctrl-C and outlives make.
set -m
lane_control_plane &
control_plane=$!
lane_tools &
tools=$!
trap 'kill -TERM -- -"$control_plane" -"$tools" 2>/dev/null; exit 130' INT TERM
status=0
wait "$control_plane" || status=$?
wait "$tools" || status=$?
exit "$status"
