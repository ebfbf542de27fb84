// Package api holds Eddy's CRD Go types, one package per API group and
// version (source/v1, kustomize/v1, ...), wire-compatible with Flux's. The
// CRD YAML in config/crd/bases is generated from them by `make generate`.
package api
