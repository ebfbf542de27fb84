# Eddy: see README.md. `make test` is the test command CI runs.

MODULES := api pkg source-controller kustomize-controller helm-controller notification-controller cli
CONTROLLERS := source-controller kustomize-controller helm-controller notification-controller
PACKAGES := $(foreach m,$(MODULES),./$(m)/...)

CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := bin/controller-gen
GO_TEST_FLAGS ?= -count=1 -timeout 25m
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)

.PHONY: all build generate tools test fuzz bench lint clean demo

all: build

## build: all binaries into bin/ (controllers and the eddy CLI)
build:
	@mkdir -p bin
	go build -o bin/ $(foreach c,$(CONTROLLERS),./$(c))
	go build -ldflags "-X main.version=$(VERSION)" -o bin/eddy ./cli

## generate: deepcopy functions and CRD YAML (config/crd/bases) with controller-gen
generate: $(CONTROLLER_GEN)
	cd api && $(CURDIR)/$(CONTROLLER_GEN) object paths=./...
	cd api && $(CURDIR)/$(CONTROLLER_GEN) crd paths=./... output:crd:artifacts:config=$(CURDIR)/config/crd/bases

$(CONTROLLER_GEN): Makefile
	GOBIN=$(CURDIR)/bin go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	@touch $@

## tools: the local cluster's binaries into bin/k8s, built from upstream source (idempotent)
tools:
	bash tools/build.sh

## test: unit, integration and e2e tests (needs `make tools`; starts local clusters; e2e tests
## drive bin/eddy), then a short fuzz run
test: tools build $(CONTROLLER_GEN)
	go test $(GO_TEST_FLAGS) -v $(PACKAGES)
	$(MAKE) fuzz

## fuzz: each fuzz test for FUZZTIME (default 10s: replaying the corpus takes a few seconds)
FUZZTIME ?= 10s
FUZZ_TARGETS := FuzzEventHandler:./notification-controller/internal/server/ FuzzReceiverHandler:./notification-controller/internal/server/ \
	FuzzExtract:./pkg/artifact/ FuzzLoadIgnore:./pkg/artifact/ FuzzParseID:./pkg/ssa/ \
	FuzzSubstitute:./kustomize-controller/internal/build/
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "go test -run '^$$' -fuzz '^$${t%%:*}$$' -fuzztime $(FUZZTIME) $${t#*:}"; \
		go test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:} || exit 1; \
	done

## demo: a scripted tour of Eddy on examples/platform-config: first sync, drift, a commit,
## prune, revert, a killed controller; exits 0 with a summary and stops all it started.
## The first run builds bin/k8s (about 15 minutes on 2 cores); later runs take under a minute.
demo: tools build
	bin/eddy dev demo

## bench: benchmarks, each reported as a ratio to a baseline measured in the same run
bench: tools
	go test -run '^$$' -bench . -benchtime 3x ./pkg/artifact/
	go test -run '^$$' -bench . -benchtime 1x ./source-controller/internal/controller/
	go test -run '^$$' -bench . -benchtime 1x -timeout 30m ./kustomize-controller/internal/controller/
	go test -run '^$$' -bench . -benchtime 10x ./notification-controller/internal/controller/

## lint: gofmt and go vet
lint:
	@out=$$(gofmt -l $(MODULES) tools); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(PACKAGES)
	cd tools && GOWORK=off go vet ./...

clean:
	rm -rf bin
