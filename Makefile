# Grove: gang-scheduled inference and training on Kubernetes. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

TOOLS_BIN      := $(CURDIR)/bin/tools
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen
KUSTOMIZE      := $(TOOLS_BIN)/kustomize
GOLANGCI_LINT  := $(TOOLS_BIN)/golangci-lint
export GROVE_TOOLS_BIN := $(TOOLS_BIN)

# Packages of the project's own API groups, whose CRDs the deploy overlays install (the config
# file is no CRD). The local types of KAI's and NVIDIA's kinds become CRDs in config/thirdparty,
# for the local cluster and the tests only.
CRD_PATHS := ./apis/grove/...;./apis/scheduler/...;./apis/trainer/...
CRD_OPTIONS := crd:allowDangerousTypes=true,generateEmbeddedObjectMeta=true
GO_TEST   := go test -count=1
# Every build of the project's binaries uses -trimpath, as hack/tools.sh and the e2e tests' builds
# do: a compiled package is reused only across builds with the same flags (hack/tools/README.md).
BUILD_FLAGS := -trimpath
UNIT_PKGS  = $$(go list ./... | grep -v '/test/')

##@ General

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: tools
# The project's packages compile first, as in run-local: the control plane's, kwok's and JobSet's
# builds reuse them instead of compiling their own copies side by side.
tools: ## Build the pinned tools and control-plane binaries (cached outside the clone).
	@go list $(BUILD_FLAGS) -export -deps ./cmd/... ./hack/run-local > /dev/null
	hack/tools.sh

.PHONY: generate
generate: ## Generate deepcopy code and the typed apply configurations every binary applies with.
	@test -x $(CONTROLLER_GEN) || hack/tools.sh gen
	$(CONTROLLER_GEN) object paths=./apis/...
	$(CONTROLLER_GEN) applyconfiguration paths="./apis/grove/...;./apis/scheduler/...;./apis/trainer/..."

.PHONY: manifests
manifests: ## Generate the CRDs (config/crd/bases; KAI's and NVIDIA's kinds for tests: config/thirdparty), webhook configurations (config/webhook) and each binary's RBAC (config/rbac/<binary>).
	@test -x $(CONTROLLER_GEN) || hack/tools.sh gen
	$(CONTROLLER_GEN) $(CRD_OPTIONS) paths="$(CRD_PATHS)" output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) $(CRD_OPTIONS) paths=./apis/kai/... output:crd:artifacts:config=config/thirdparty/kai
	$(CONTROLLER_GEN) $(CRD_OPTIONS) paths=./apis/nvidia/... output:crd:artifacts:config=config/thirdparty/nvidia
	$(CONTROLLER_GEN) webhook paths="./webhooks/pcsadmission/...;./webhooks/topologyadmission/...;./webhooks/trainjobadmission/...;./webhooks/resizeguard/..." output:webhook:artifacts:config=config/webhook
	$(CONTROLLER_GEN) webhook paths=./webhooks/managedguard/... output:webhook:artifacts:config=config/webhook/authorizer
	$(CONTROLLER_GEN) rbac:roleName=grove-operator paths="./cmd/grove-operator/...;./controllers/operator/..." output:rbac:artifacts:config=config/rbac/grove-operator
	$(CONTROLLER_GEN) rbac:roleName=grove-webhook paths="./cmd/grove-webhook/...;./webhooks/..." output:rbac:artifacts:config=config/rbac/grove-webhook
	$(CONTROLLER_GEN) rbac:roleName=backend-controller paths="./cmd/backend-controller/...;./controllers/backend/...;./backends/..." output:rbac:artifacts:config=config/rbac/backend-controller
	$(CONTROLLER_GEN) rbac:roleName=trainer-controller paths="./cmd/trainer-controller/...;./controllers/trainer/..." output:rbac:artifacts:config=config/rbac/trainer-controller

.PHONY: verify-generated
verify-generated: generate manifests ## Fail if generated files differ from the committed ones.
	@git diff --exit-code -- apis config || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- apis config)" || { git status --porcelain -- apis config; echo "untracked generated files: commit them"; exit 1; }

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run gofmt, go vet and golangci-lint (.golangci.yml), check that the local cluster's tools compile the project's library versions, and that every kustomization builds.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	go vet ./...
	@$(MAKE) --no-print-directory lint
	hack/verify-tool-versions.sh
	@test -x $(KUSTOMIZE) || hack/tools.sh gen
	@for k in deploy/base deploy/overlays/* deploy/argocd config/crd config/samples config/webhook config/webhook/authorizer; do $(KUSTOMIZE) build $$k > /dev/null || { echo "kustomize build $$k failed"; exit 1; }; done

.PHONY: lint
lint: ## Run the pinned golangci-lint (.golangci.yml: goimports with the project's prefix, errcheck, staticcheck, unparam, nilerr, ineffassign, unused).
	@test -x $(GOLANGCI_LINT) || hack/tools.sh lint
	$(GOLANGCI_LINT) run ./...

.PHONY: build
build: ## Build the four binaries and the kubectl-grove plugin into bin/ (put bin/ on PATH for `kubectl grove`).
	go build $(BUILD_FLAGS) -o bin/ ./cmd/...

##@ Test

# The upstream corpus tier's folder, made absolute: the tests run in their packages' folders.
ifneq ($(GROVE_UPSTREAM_CORPUS),)
export GROVE_UPSTREAM_CORPUS := $(abspath $(GROVE_UPSTREAM_CORPUS))
endif

# The tiers make test runs in a clean copy of the repository (hack/clean-copy.sh).
COPY_TIERS := run-local-check test-unit test-fuzz-short test-integration test-e2e test-chaos-short bench-smoke

.PHONY: test
test: ## Run every test (what CI runs): tools, generated-file check and vet here, then in a copy of the tracked files with nothing beside it: run-local until every sample is done, unit, fuzz, integration, e2e, a short chaos run, the benchmark smoke run.
	@$(if $(GROVE_UPSTREAM_CORPUS),echo "upstream corpus tier: $(GROVE_UPSTREAM_CORPUS)",echo "upstream corpus tier not run: GROVE_UPSTREAM_CORPUS is unset (set it to a folder holding upstream's compat/ and crds/ to also apply upstream Grove's manifests unchanged and compare the local KAI and NVIDIA types with their published CRDs)")
	@hack/phases.sh tools verify-generated vet test-from-copy

.PHONY: test-from-copy
test-from-copy: ## The test tiers of make test (COPY_TIERS) in a copy of the tracked files in an empty temporary folder: a clone anywhere works.
	@hack/clean-copy.sh $(COPY_TIERS)

.PHONY: test-unit
test-unit: ## Unit tests (fake clients, no API server).
	$(GO_TEST) $(UNIT_PKGS) ./test/bench/

# Every fuzz target (./<package>:<FuzzName>), found in the sources so a new one cannot be left out.
FUZZ_TARGETS := $(shell grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+' apis backends controllers internal webhooks | sed -E 's|^(.*)/[^/]+:func (Fuzz[A-Za-z0-9_]+)$$|./\1:\2|' | sort)
FUZZ_TIME ?= 5m
# Per target in fuzz-long and test-hostile.
FUZZ_LONG_TIME ?= 2m
# The packages that submit hostile input to, and probe the listeners of, the running binaries.
HOSTILE_PKGS := ./test/integration/hostile/ ./test/integration/security/

.PHONY: test-fuzz-short
test-fuzz-short: ## A short pass (20000 inputs) of every fuzz target, part of make test so they cannot rot.
	@$(MAKE) --no-print-directory fuzz FUZZ_TIME=20000x

.PHONY: fuzz
fuzz: ## Fuzz admission and the configuration file for FUZZ_TIME per target (default 5m; a count such as 20000x avoids the deadline).
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzzing $$fn in $$pkg for $(FUZZ_TIME)"; \
		go test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZ_TIME) $$pkg || exit 1; done

.PHONY: fuzz-long
fuzz-long: ## Every fuzz target for FUZZ_LONG_TIME each (default 2m), the longer run test-hostile makes.
	@$(MAKE) --no-print-directory fuzz FUZZ_TIME=$(FUZZ_LONG_TIME)

.PHONY: test-hostile
test-hostile: tools ## Hostile input and security checks against the four running binaries, then fuzz-long (about 2m per fuzz target).
	$(GO_TEST) -timeout 15m $(HOSTILE_PKGS)
	@$(MAKE) --no-print-directory fuzz-long

.PHONY: test-integration
test-integration: tools ## Integration tests against a real kube-apiserver + etcd (envtest).
	$(GO_TEST) -timeout 20m ./test/integration/...

.PHONY: test-e2e
# The upstream corpus tier (thousands of pods) runs alone, before the other e2e packages run side by
# side: on two cores, sharing the machine with another package's cluster starved its API server.
E2E_PKGS := $(filter-out ./test/e2e/compat/,$(sort $(dir $(wildcard ./test/e2e/*/*_test.go))))

test-e2e: tools ## End-to-end tests on a local cluster of processes (apiserver, controller-manager, scheduler, kwok, JobSet).
	$(GO_TEST) -timeout 30m ./test/e2e/compat/
	$(GO_TEST) -timeout 30m $(E2E_PKGS)

CHAOS_DURATION ?= 30m
CHAOS_SEED     ?=
CHAOS_TIMEOUT  ?= 3h

.PHONY: test-chaos
test-chaos: tools ## Chaos suite: a mixed workload under seeded faults for CHAOS_DURATION (default 30m), invariants checked, figures printed; CHAOS_SEED=<n> replays a run's fault schedule (random by default, always printed). Then test-hostile (hostile input, security, longer fuzz).
	@$(MAKE) --no-print-directory chaos-suite
	@$(MAKE) --no-print-directory test-hostile

.PHONY: chaos-suite
chaos-suite: tools ## The chaos suite alone (test-chaos without test-hostile).
	CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_SEED=$(CHAOS_SEED) $(GO_TEST) -v -timeout $(CHAOS_TIMEOUT) ./test/chaos/

.PHONY: test-chaos-short
test-chaos-short: ## The chaos suite with a 2-minute fault window and a random (printed) seed, part of make test so it cannot rot.
	@$(MAKE) --no-print-directory chaos-suite CHAOS_DURATION=2m CHAOS_TIMEOUT=20m

##@ Benchmarks

.PHONY: bench
bench: tools ## Measure the operators against a same-run baseline on the local cluster (several minutes); JSON in bench/results/.
	go run ./test/bench -out bench/results

.PHONY: bench-smoke
bench-smoke: tools ## The benchmark harness on tiny scenarios (part of make test: it must not rot; numbers not enforced).
	go run ./test/bench -smoke -out bin/bench

##@ Run

.PHONY: run-local
# What the local run starts, and so all it builds: the control plane, kwok and JobSet (Kueue only
# with KUEUE=1, Prometheus only with MONITORING=1). It applies the committed CRDs and its samples
# itself (kustomize's library, server-side apply), so it needs neither the generators nor kubectl:
# they are the tests' and the bench's (after changing apis/ or markers, run make manifests first).
# The project builds first: the tools' builds then reuse most of its compiled packages
# (hack/tools/README.md).
RUN_LOCAL_TOOLS := cluster kwok jobset $(if $(KUEUE)$(MULTICLUSTER),kueue) $(if $(MONITORING),prometheus)

run-local: ## Start the local cluster, the four binaries and the samples (KUEUE=1: with Kueue and a queued sample; PLAIN=1: kube-scheduler without gangs; MONITORING=1: with Prometheus and the shipped alerts; MULTICLUSTER=1: a MultiKueue manager and two workers, a Training PodCliqueSet dispatched); Ctrl-C stops all.
	@start=$$(date +%s); echo "building the project (bin/)"; \
	  go build $(BUILD_FLAGS) -o bin/ ./cmd/... ./hack/run-local && \
	  echo "project built in $$(( $$(date +%s) - start ))s"
	@hack/tools.sh $(RUN_LOCAL_TOOLS)
	bin/run-local $(if $(KUEUE),-kueue) $(if $(PLAIN),-plain-scheduler) $(if $(MONITORING),-monitoring) $(if $(MULTICLUSTER),-multicluster) $(RUN_LOCAL_ARGS)

.PHONY: run-local-check
run-local-check: ## make run-local MONITORING=1, then KUEUE=1, then MULTICLUSTER=1, each until every sample reached its final state (fails when one does not).
	@$(MAKE) --no-print-directory run-local MONITORING=1 RUN_LOCAL_ARGS=-run-for=1s
	@$(MAKE) --no-print-directory run-local KUEUE=1 RUN_LOCAL_ARGS=-run-for=1s
	@$(MAKE) --no-print-directory run-local MULTICLUSTER=1 RUN_LOCAL_ARGS=-run-for=1s

##@ Images

# Images are named $(IMG_PREFIX)/<binary>:$(TAG), the names the deploy/overlays set in `images:`.
IMG_PREFIX     ?= ghcr.io/kubegrove
TAG            ?= latest
CONTAINER_TOOL ?= docker
IMAGES         := grove-operator grove-webhook backend-controller trainer-controller

.PHONY: docker-build
docker-build: $(addprefix docker-build-,$(IMAGES)) ## Build the four images as IMG_PREFIX/<binary>:TAG with CONTAINER_TOOL (docker).

# One image: make docker-build-grove-webhook. Each is a target of the one Dockerfile.
.PHONY: $(addprefix docker-build-,$(IMAGES))
$(addprefix docker-build-,$(IMAGES)): docker-build-%:
	$(CONTAINER_TOOL) build --target $* -t $(IMG_PREFIX)/$*:$(TAG) .
