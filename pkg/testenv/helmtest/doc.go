// Package helmtest holds test fixtures shared by the Helm tests of source-controller and
// helm-controller, all built on the Helm v3 SDK so that what a test serves, pushes or reads is
// what the helm CLI would:
//
//   - PackageChart packages a chart directory into a .tgz (as `helm package`), optionally as
//     another version; PodinfoChartDir locates the real podinfo chart of shared/testdata and
//     MinimalChart writes a one-ConfigMap chart that needs nothing else;
//   - ChartServer is an HTTP(S) Helm chart repository (index.yaml and archives) with optional
//     basic auth, injectable failures and request counters;
//   - OCIRegistry is an in-process OCI registry that charts are pushed to as `helm push` does;
//   - ActionConfig, Releases and History read (and let a test write) the Helm releases stored in
//     a cluster, as `helm list -a` and `helm history` see them.
//
// Every fixture fails the test on error and is cleaned up by t.Cleanup.
package helmtest
