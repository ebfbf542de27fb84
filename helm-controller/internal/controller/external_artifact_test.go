package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/testenv/helmtest"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newChartExternalArtifact creates an ExternalArtifact and, unless a is
// nil, writes the status its producer would: artifact a, Ready.
func newChartExternalArtifact(t *testing.T, ns, name string, a *meta.Artifact) {
	t.Helper()
	ctx := context.Background()
	ea := &sourcev1.ExternalArtifact{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := env.Client.Create(ctx, ea); err != nil {
		t.Fatal(err)
	}
	if a == nil {
		return
	}
	ea.Status.Artifact = a
	ea.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
		Reason: meta.SucceededReason, Message: "stored", LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(ctx, ea); err != nil {
		t.Fatal(err)
	}
}

func externalRelease(t *testing.T, ns, name, shard string) *helmv2.HelmRelease {
	t.Helper()
	return newRelease(t, ns, name, "", func(hr *helmv2.HelmRelease) {
		hr.Labels = map[string]string{shardKey: shard}
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: name}
	})
}

// waitNotReadyMessage waits until Ready=False with reason and message.
func waitNotReadyMessage(t *testing.T, hr *helmv2.HelmRelease, reason, msg string) {
	t.Helper()
	waitFor(t, hr, fmt.Sprintf("Ready=False %s %q", reason, msg), func() bool {
		c := cond(hr, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.Message == msg
	})
}

// TestBinaryExternalArtifactChartRef: with the ExternalArtifact gate on, a
// chartRef to an ExternalArtifact releases its unsigned chart archive,
// checked against its digest, with the digest in the chart version as
// Flux does; one without an artifact waits (SourceNotReady) and one whose
// bytes do not match its digest is never released. With the gate off (the
// default, as Flux) the chartRef is refused and Stalled.
func TestBinaryExternalArtifactChartRef(t *testing.T) {
	t.Parallel()
	const shard, offShard = "external", "external-off"
	testenv.RunBinary(t, env, exe, append(binaryFlags, "--watch-label-selector="+shardKey+"="+shard,
		"--feature-gates=ExternalArtifact=true")...)
	testenv.RunBinary(t, env, exe, append(binaryFlags, "--watch-label-selector="+shardKey+"="+offShard)...)
	ns := newNamespace(t)
	srv := helmtest.NewChartServer(t)
	a := podinfo(t, srv, "")
	want := a.Revision + "+" + strings.TrimPrefix(a.Digest, "sha256:")[:12]
	a.Revision = "latest@" + a.Digest

	newChartExternalArtifact(t, ns, "podinfo", a)
	hr := externalRelease(t, ns, "podinfo", shard)
	waitReady(t, hr, helmv2.InstallSucceededReason,
		fmt.Sprintf("Helm install succeeded for release %s/podinfo.v1 with chart podinfo@%s", ns, want))
	if hr.Status.LastAttemptedRevisionDigest != a.Revision {
		t.Errorf("lastAttemptedRevisionDigest %q, want %q", hr.Status.LastAttemptedRevisionDigest, a.Revision)
	}

	newChartExternalArtifact(t, ns, "empty", nil)
	empty := externalRelease(t, ns, "empty", shard)
	waitNotReadyMessage(t, empty, helmv2.SourceNotReadyReason,
		fmt.Sprintf("ExternalArtifact '%s/empty' is not ready: does not have an artifact", ns))

	forged := *a
	forged.Digest = "sha256:" + strings.Repeat("0", 64)
	newChartExternalArtifact(t, ns, "forged", &forged)
	bad := externalRelease(t, ns, "forged", shard)
	waitNotReady(t, bad, helmv2.ArtifactFailedReason)
	if len(bad.Status.History) != 0 {
		t.Errorf("a chart that does not match its digest was released: %+v", bad.Status.History)
	}

	off := newRelease(t, ns, "off", "", func(hr *helmv2.HelmRelease) {
		hr.Labels = map[string]string{shardKey: offShard}
		hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.ExternalArtifactKind, Name: "podinfo"}
	})
	waitNotReadyMessage(t, off, "AccessDenied",
		fmt.Sprintf("can't access 'ExternalArtifact/%s/podinfo', ExternalArtifact feature gate is disabled", ns))
	waitFor(t, off, "Stalled", func() bool {
		c := cond(off, meta.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue
	})
}
