// Package faults holds the fault-injection suite of Eddy's controllers (its
// tests only): the built source-, kustomize- and helm-controller run against
// a local cluster while the suite kills them (SIGKILL, and deterministic
// exits at the fault points of pkg/faultpoint), restarts kube-apiserver and
// etcd in place, and makes the Git server hang; afterwards it checks that
// the cluster converged with nothing orphaned, duplicated or left pending.
//
// `go test` runs the short form; `make faults` (EDDY_FAULTS=full) the full
// one. The seed of the random schedule is printed, and EDDY_FAULTS_SEED
// replays it.
package faults
