package controllerkit

import (
	"testing"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestArtifactChangedSources: a new or changed artifact of each source kind
// passes; an unchanged one, a removed one and other kinds do not.
func TestArtifactChangedSources(t *testing.T) {
	a1 := &meta.Artifact{Revision: "sha256:1", Digest: "sha256:a"}
	a2 := &meta.Artifact{Revision: "sha256:2", Digest: "sha256:b"}
	helmRepo := func(a *meta.Artifact) *sourcev1.HelmRepository {
		return &sourcev1.HelmRepository{Status: sourcev1.HelmRepositoryStatus{Artifact: a}}
	}
	chart := func(a *meta.Artifact) *sourcev1.HelmChart {
		return &sourcev1.HelmChart{Status: sourcev1.HelmChartStatus{Artifact: a}}
	}
	git := func(a *meta.Artifact) *sourcev1.GitRepository {
		return &sourcev1.GitRepository{Status: sourcev1.GitRepositoryStatus{Artifact: a}}
	}
	p := ArtifactChanged{}
	for _, tc := range []struct {
		name string
		e    event.UpdateEvent
		want bool
	}{
		{"helmrepo appeared", event.UpdateEvent{ObjectOld: helmRepo(nil), ObjectNew: helmRepo(a1)}, true},
		{"helmrepo changed", event.UpdateEvent{ObjectOld: helmRepo(a1), ObjectNew: helmRepo(a2)}, true},
		{"helmrepo same", event.UpdateEvent{ObjectOld: helmRepo(a1), ObjectNew: helmRepo(a1.DeepCopy())}, false},
		{"helmrepo removed", event.UpdateEvent{ObjectOld: helmRepo(a1), ObjectNew: helmRepo(nil)}, false},
		{"helmchart changed", event.UpdateEvent{ObjectOld: chart(a1), ObjectNew: chart(a2)}, true},
		{"gitrepo changed", event.UpdateEvent{ObjectOld: git(a1), ObjectNew: git(a2)}, true},
		{"configmap", event.UpdateEvent{ObjectOld: &corev1.ConfigMap{}, ObjectNew: &corev1.ConfigMap{}}, false},
	} {
		if got := p.Update(tc.e); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
