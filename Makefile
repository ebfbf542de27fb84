# Eddy: see README.md. `make test` is the test command CI runs.

# Longest-running tests first: `go test` runs packages about in this order, two at a time on
# 2 cores, and the cli e2e tests (~10 minutes) started last used to be the run's tail.
MODULES := cli kustomize-controller source-controller source-watcher notification-controller helm-controller application-controller image-reflector-controller image-automation-controller pkg api config tools/images
CONTROLLERS := source-controller kustomize-controller helm-controller notification-controller application-controller image-reflector-controller image-automation-controller source-watcher
# Helper binaries, built beside the controllers and put in their images: kustomize-controller's
# SOPS helper (decryption runs in a process of its own; see kustomize-controller/internal/sopswire).
HELPERS := ./kustomize-controller/cmd/eddy-sops
PACKAGES := $(foreach m,$(MODULES),./$(m)/...)

CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := bin/controller-gen
# The cli package's e2e tests, the real-node ones included, take about 20 minutes
# on 2 cores: the per-package timeout leaves room for a slower machine.
GO_TEST_FLAGS ?= -race -count=1 -timeout 40m
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
# The controllers' --version (pkg/controllerkit.Version).
CONTROLLER_LDFLAGS := -X github.com/eddyops/eddy/pkg/controllerkit.Version=$(VERSION)
EDDY_LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build generate tools test test-node skipped-summary fuzz bench faults lint clean demo images test-images node-images push-images

all: build

## build: all binaries into bin/ (controllers, their helpers and the eddy CLI). The controllers are static
## (CGO off, -trimpath): the very binaries `make images` puts in the linux/amd64 images on an
## amd64 host, so the two share Go's build cache.
build:
	@mkdir -p bin
	CGO_ENABLED=0 go build -trimpath -ldflags "$(CONTROLLER_LDFLAGS)" -o bin/ $(foreach c,$(CONTROLLERS),./$(c)) $(HELPERS)
	go build -ldflags "$(EDDY_LDFLAGS)" -o bin/eddy ./cli

## images: one OCI image per controller, built without Docker by tools/images (go-containerregistry):
## static binaries for IMAGE_PLATFORMS, a scratch base with CA certificates and user 65534,
## OCI labels, one multi-platform index per controller; written as one OCI image layout to
## bin/images (named REGISTRY/<controller>:VERSION, default registry ghcr.io/eddyops) with
## bin/images/digests ("<controller>=sha256:…" lines). Reproducible: same source, same digests
## (fixed SOURCE_DATE_EPOCH, the commit time). Then bin/eddy is relinked so that the install
## bundle pins these digests (install.DefaultImageDigests); make build relinks it without them.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_SOURCE ?= https://github.com/eddyops/eddy
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
comma := ,
empty :=
space := $(empty) $(empty)
images:
	@set -e; for p in $(IMAGE_PLATFORMS); do \
		echo "CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -o bin/$${p%/*}_$${p#*/}/ <controllers>"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags "$(CONTROLLER_LDFLAGS)" \
			-o bin/$${p%/*}_$${p#*/}/ $(foreach c,$(CONTROLLERS),./$(c)) $(HELPERS); \
	done
	go run ./tools/images build -bin bin -out bin/images -registry $(or $(REGISTRY),ghcr.io/eddyops) \
		-version $(VERSION) -revision "$(REVISION)" -source $(IMAGE_SOURCE) -created $(SOURCE_DATE_EPOCH) \
		-platforms $(subst $(space),$(comma),$(IMAGE_PLATFORMS)) $(CONTROLLERS)
	go build -ldflags "$(EDDY_LDFLAGS) -X github.com/eddyops/eddy/cli/internal/install.DefaultImageDigests=$$(paste -sd, bin/images/digests)" -o bin/eddy ./cli

## test-images: the controllers' images as make images builds them, for linux/amd64 only, in
## bin/test-images (what the node profile's e2e test installs, TestInstallRunsControllersAsPods);
## bin/images and bin/eddy are left alone. After make build the packages are cached: 2-3 min.
test-images: build
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "$(CONTROLLER_LDFLAGS)" \
		-o bin/linux_amd64/ $(foreach c,$(CONTROLLERS),./$(c)) $(HELPERS)
	go run ./tools/images build -bin bin -out bin/test-images -registry $(or $(REGISTRY),ghcr.io/eddyops) \
		-version $(VERSION) -revision "$(REVISION)" -source $(IMAGE_SOURCE) -created $(SOURCE_DATE_EPOCH) \
		-platforms linux/amd64 $(CONTROLLERS)

## node-images: the images a real node needs besides the controllers' (the node profile and its
## tests), built by tools/images like theirs (reproducible, no Docker, nothing pulled), linux/amd64
## only, written as one OCI image layout to bin/node-images (named REGISTRY/pause:<pause TAG> and
## REGISTRY/tinyapp:VERSION) with bin/node-images/digests: the pause image (Kubernetes'
## build/pause/linux/pause.c from the k8s.io/kubernetes module tools/go.mod pins, compiled with the
## host's gcc -static by tools/pause.sh) and the tiny application (tools/images/tinyapp: a static HTTP
## server standing in for podinfo, with podcli for its probes). Apart from make images: it needs
## gcc, not the two-platform controller builds, and leaves bin/images and bin/eddy alone.
node-images:
	@mkdir -p bin/linux_amd64
	@set -e; set -- $$(bash tools/pause.sh bin/linux_amd64/pause); \
	echo "bin/linux_amd64/pause: pause $$1 from k8s.io/kubernetes $$2 (gcc -static)"; \
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/linux_amd64/tinyapp ./tools/images/tinyapp; \
	go run ./tools/images node -bin bin -out bin/node-images -registry $(or $(REGISTRY),ghcr.io/eddyops) \
		-version $(VERSION) -revision "$(REVISION)" -source $(IMAGE_SOURCE) -created $(SOURCE_DATE_EPOCH) \
		-pause-version $$1 -kubernetes-version $$2

## push-images: push bin/images to REGISTRY/<controller>:VERSION (no Docker; credentials from
## ~/.docker/config.json, e.g. written by `docker login` or `crane auth login`); prints each
## pushed image as REGISTRY/<controller>:VERSION@sha256:…
push-images:
	@test -n "$(REGISTRY)" || { echo "push-images: name the registry, e.g. make push-images REGISTRY=ghcr.io/acme" >&2; exit 2; }
	go run ./tools/images push -layout bin/images -registry $(REGISTRY)

## generate: deepcopy functions and CRD YAML (config/crd/bases) with controller-gen
generate: $(CONTROLLER_GEN)
	cd api && $(CURDIR)/$(CONTROLLER_GEN) object paths=./...
	cd api && $(CURDIR)/$(CONTROLLER_GEN) crd paths=./... output:crd:artifacts:config=$(CURDIR)/config/crd/bases

$(CONTROLLER_GEN): Makefile
	GOBIN=$(CURDIR)/bin go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	@touch $@

## tools: the local cluster's binaries (kubelet, kube-proxy and containerd for the node profile's real
## node among them), kubectl (for the e2e tests' kubectl lines) and CoreDNS (the cluster's DNS, with
## only the plugins it needs) into bin/k8s and the real flux CLI into bin/flux (for the compatibility
## e2e test), built from upstream source, and Debian's chromium package (for the web UI's browser
## tests; apt-get, when /usr/bin/chromium is missing), and the node profile's Debian packages runc,
## containernetworking-plugins and nftables (apt-get, as root, when missing) (idempotent)
tools:
	bash tools/build.sh
	bash tools/containerd.sh
	bash tools/kubectl.sh
	bash tools/coredns.sh
	bash tools/flux.sh
	bash tools/chromium.sh
	bash tools/node-packages.sh

## test: unit, integration and e2e tests under the race detector (needs `make tools`; starts
## local clusters; e2e tests drive bin/eddy), then a short fuzz run. Without the companion
## shared/ folder (../shared, or EDDY_SHARED_DIR) the tests of its real repositories are
## skipped, and the last line names them.
SKIP_LOG := $(CURDIR)/bin/skipped-without-shared.txt
## Files tests write with t.ArtifactDir() (the web UI's screenshots) are kept under bin/test-artifacts/_artifacts.
ARTIFACTS := $(CURDIR)/bin/test-artifacts
test: tools build node-images test-images $(CONTROLLER_GEN)
	@rm -f $(SKIP_LOG); rm -rf $(ARTIFACTS); mkdir -p $(ARTIFACTS)
	EDDY_SKIP_LOG=$(SKIP_LOG) EDDY_BUILT_BIN_DIR=$(CURDIR)/bin go test $(GO_TEST_FLAGS) -artifacts -outputdir $(ARTIFACTS) -v $(PACKAGES) || { $(MAKE) -s skipped-summary; exit 1; }
	$(MAKE) fuzz
	@$(MAKE) -s skipped-summary

# skipped-summary: one line naming the tests skipped for want of shared/, if any.
skipped-summary:
	@if [ -s $(SKIP_LOG) ]; then \
		echo "Not run without shared/: $$(sort -u $(SKIP_LOG) | awk '{a[$$1]=a[$$1] (a[$$1]?",":"") $$2} END {for (p in a) printf "%s%s (%s)", n++?"; ":"", p, a[p]}'); to run them: EDDY_SHARED_DIR=/path/to/shared make test"; \
	fi

## fuzz: each fuzz test for FUZZTIME (default 10s: replaying the corpus takes a few seconds)
FUZZTIME ?= 10s
FUZZ_TARGETS := FuzzEventHandler:./notification-controller/internal/server/ FuzzReceiverHandler:./notification-controller/internal/server/ \
	FuzzExtract:./pkg/artifact/ FuzzLoadIgnore:./pkg/artifact/ FuzzParseID:./pkg/ssa/ FuzzDriftMessage:./pkg/ssa/ \
	FuzzSubstitute:./pkg/kustomize/
## A run that ends in the fuzzing engine's own "context deadline exceeded" with no failing
## input written (a worker slow to stop on a loaded machine) is run once more; a finding fails.
fuzz:
	@mkdir -p bin; for t in $(FUZZ_TARGETS); do \
		cmd="go test -run '^$$' -fuzz '^$${t%%:*}$$' -fuzztime $(FUZZTIME) $${t#*:}"; echo "$$cmd"; \
		if ! eval "$$cmd" > bin/fuzz.log 2>&1; then \
			cat bin/fuzz.log; \
			if grep -q 'context deadline exceeded' bin/fuzz.log && ! grep -q 'Failing input written' bin/fuzz.log; then \
				echo "fuzz: the engine's deadline, not a finding: running $${t%%:*} once more"; eval "$$cmd" || exit 1; \
			else exit 1; fi; \
		else cat bin/fuzz.log; fi; \
	done

## demo: a scripted tour of Eddy on examples/platform-config: first sync, drift, a commit,
## prune, revert, a killed controller, then a HelmRelease: install, upgrade, a failed upgrade
## rolled back, Helm drift; exits 0 with a summary and stops all it started.
## The first run builds bin/k8s (about 15 minutes on 2 cores); later runs take about a minute and a half.
## It needs the local cluster's binaries only, not the flux CLI or the browser that make test uses.
demo: build
	bash tools/build.sh
	bin/eddy dev demo

## faults: the full form of the crash-consistency suite (helm-controller/internal/faults, whose short
## form `make test` runs): at least 100 random SIGKILLs and fault-point exits of source-, kustomize-
## and helm-controller (two kustomize-controller replicas with leader election, the leader killed),
## 3 kube-apiserver and 3 etcd restarts, Git hangs, 20 Kustomizations x 50 objects and 5 HelmReleases;
## then convergence within two intervals is checked and the run's figures printed (lines "faults: ...").
## FAULTS_SEED=<n> replays a run's schedule (its seed is printed first).
faults: tools build
	EDDY_FAULTS=full EDDY_FAULTS_SEED=$(FAULTS_SEED) EDDY_BUILT_BIN_DIR=$(CURDIR)/bin go test -count=1 -timeout 60m -v -run '^TestCrashConsistency$$' ./helm-controller/internal/faults/

## test-node: the long real-node suite (root; bin/node-images and bin/test-images): GitOps on the real
## node (bootstrap, crash and revert, pods deleted, leader handover), health checks of real pods, and
## `eddy dev up/down --node real`. make test runs its short form (TestInstallRunsControllersAsPods and
## pkg/localcluster's node tests); CI runs both.
NODE_SUITE := ^(TestGitOpsOnTheRealNode|TestNodeHealthChecksSayWhyPodsAreNotReady|TestDevUpRealNodeRunsControllersAsPodsAndDownLeavesNothing|TestDevDownSweepsARealNodeWhoseOwnerWasKilled)$$
test-node: tools build node-images test-images
	EDDY_NODE_SUITE=full EDDY_BUILT_BIN_DIR=$(CURDIR)/bin go test $(GO_TEST_FLAGS) -v -run '$(NODE_SUITE)' ./cli/

## bench: benchmarks, each reported as a ratio to a baseline measured in the same run
## (Applications: N=100; EDDY_BENCH_APPS_N=100,1000 adds 1,000); the last, Eddy on a real node
## (node profile: root and its Debian packages, else one skip line), compares commit → Ready with
## the controllers as pods and as local processes (EDDY_BENCH_NODE_REPS commits each, default 9).
## Every result line goes to bin/bench.txt too; the run ends with one table of its ratio-* metrics.
# bench's shell: a benchmark that fails fails make bench even through tee.
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
BENCH_OUT := bin/bench.txt
bench: tools build node-images test-images flux-controllers
	@mkdir -p bin; : > $(BENCH_OUT)
	go test -run '^$$' -bench . -benchtime 3x ./pkg/artifact/ | tee -a $(BENCH_OUT)
	go test -run '^$$' -bench . -benchtime 1x ./source-controller/internal/controller/ | tee -a $(BENCH_OUT)
	go test -run '^$$' -bench . -benchtime 1x -timeout 3h ./kustomize-controller/internal/controller/ | tee -a $(BENCH_OUT)
	go test -run '^$$' -bench . -benchtime 1x -timeout 120m ./helm-controller/internal/bench/ | tee -a $(BENCH_OUT)
	go test -run '^$$' -bench . -benchtime 10x ./notification-controller/internal/controller/ | tee -a $(BENCH_OUT)
	EDDY_BUILT_BIN_DIR=$(CURDIR)/bin go test -run '^$$' -bench . -benchtime 1x -timeout 20m ./notification-controller/internal/bench/ | tee -a $(BENCH_OUT)
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./application-controller/internal/bench/ | tee -a $(BENCH_OUT)
	go test -run '^$$' -bench . -benchtime 1x -timeout 20m ./image-reflector-controller/internal/controller/ | tee -a $(BENCH_OUT)
	EDDY_BUILT_BIN_DIR=$(CURDIR)/bin go test -run '^$$' -bench . -benchtime 1x -timeout 20m ./image-automation-controller/internal/controller/ | tee -a $(BENCH_OUT)
	go test -run '^$$' -bench . -benchtime 1x -timeout 30m ./cli/internal/nodebench/ | tee -a $(BENCH_OUT)
	@echo; echo "Ratios against the baselines of this run (from $(BENCH_OUT)):"; cd tools && GOWORK=off go run ./benchtable ../$(BENCH_OUT)

## flux-controllers: Flux's own kustomize-, source-, helm- and notification-controller,
## built from their Go module source into bin/flux-<name>, for make bench's side-by-side runs
flux-controllers:
	bash tools/flux-controllers.sh

## lint: gofmt, go vet, and the code's size limits (tools/shape: hand-written Go files under
## 600 lines, functions under 100; tests and generated files aside)
lint:
	@out=$$(gofmt -l $(MODULES) tools); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PACKAGES)
	cd tools && GOWORK=off go vet ./...
	cd tools && GOWORK=off go test ./benchtable/
	cd tools && GOWORK=off go run ./shape $(addprefix ../,$(MODULES)) .

clean:
	rm -rf bin
