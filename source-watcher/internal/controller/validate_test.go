package controller

import (
	"testing"

	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/fluxcd/pkg/apis/meta"
)

// TestValidateStallsWithFluxReasons: specs that can never build are
// refused with Flux's reasons and messages, stalled.
func TestValidateStallsWithFluxReasons(t *testing.T) {
	src := func(alias, ns string) swv1.SourceReference {
		return swv1.SourceReference{Alias: alias, Kind: "GitRepository", Name: "repo", Namespace: ns}
	}
	out := func(name, rev string) swv1.OutputArtifact { return swv1.OutputArtifact{Name: name, Revision: rev} }
	cases := []struct {
		spec    swv1.ArtifactGeneratorSpec
		noCross bool
		reason  string
		msg     string
	}{
		{swv1.ArtifactGeneratorSpec{Sources: []swv1.SourceReference{src("a", ""), src("a", "")}, OutputArtifacts: []swv1.OutputArtifact{out("x", "")}},
			false, swv1.ValidationFailedReason, "duplicate source alias 'a' found"},
		{swv1.ArtifactGeneratorSpec{Sources: []swv1.SourceReference{src("a", "other")}, OutputArtifacts: []swv1.OutputArtifact{out("x", "")}},
			true, swv1.AccessDeniedReason, "cross-namespace reference to source GitRepository/other/repo is not allowed"},
		{swv1.ArtifactGeneratorSpec{Sources: []swv1.SourceReference{src("a", "")}, OutputArtifacts: []swv1.OutputArtifact{out("x", ""), out("x", "")}},
			false, swv1.ValidationFailedReason, "duplicate artifact name 'x' found"},
		{swv1.ArtifactGeneratorSpec{Sources: []swv1.SourceReference{src("a", "")}, OutputArtifacts: []swv1.OutputArtifact{out("x", "@b")}},
			false, swv1.ValidationFailedReason, "artifact x revision source alias 'b' not found"},
		{swv1.ArtifactGeneratorSpec{Sources: []swv1.SourceReference{src("a", "")}, PathPattern: "@a/apps/{app}", OutputArtifacts: []swv1.OutputArtifact{out("{app}", "")}},
			false, swv1.ValidationFailedReason, "spec.pathPattern is not supported by Eddy's source-watcher"},
	}
	for _, c := range cases {
		r := &ArtifactGeneratorReconciler{NoCrossNamespaceRefs: c.noCross}
		obj := &swv1.ArtifactGenerator{Spec: c.spec}
		obj.Namespace = "apps"
		f := r.validate(obj)
		if f == nil || !f.Stalled || f.Reason != c.reason || f.Message != c.msg {
			t.Errorf("%+v: %+v, want stalled %s %q", c.spec, f, c.reason, c.msg)
		}
	}
	ok := &swv1.ArtifactGenerator{Spec: swv1.ArtifactGeneratorSpec{Sources: []swv1.SourceReference{src("a", "apps")},
		OutputArtifacts: []swv1.OutputArtifact{out("x", "@a")}}}
	ok.Namespace = "apps"
	if f := (&ArtifactGeneratorReconciler{NoCrossNamespaceRefs: true}).validate(ok); f != nil {
		t.Errorf("a valid spec refused: %v", f)
	}
}

// TestRevisions: revision "@alias" copies the source's revision;
// originRevision "@alias" records the source's origin revision, else its
// revision.
func TestRevisions(t *testing.T) {
	observed := map[string]swv1.ObservedSource{
		"git": {Revision: "main@sha1:abc"},
		"oci": {Revision: "6.7.0@sha256:def", OriginRevision: "main@sha1:123"},
	}
	a := &meta.Artifact{Revision: "latest@sha256:000"}
	setRevisions(a, swv1.OutputArtifact{}, observed)
	if a.Revision != "latest@sha256:000" || a.Metadata != nil {
		t.Errorf("no revision fields: %+v", a)
	}
	setRevisions(a, swv1.OutputArtifact{Revision: "@git", OriginRevision: "@oci"}, observed)
	if a.Revision != "main@sha1:abc" || a.Metadata[swv1.OriginRevisionKey] != "main@sha1:123" {
		t.Errorf("revision @git, origin @oci: %+v", a)
	}
	setRevisions(a, swv1.OutputArtifact{OriginRevision: "@git"}, observed)
	if a.Metadata[swv1.OriginRevisionKey] != "main@sha1:abc" {
		t.Errorf("origin @git: %+v", a)
	}
}
