package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Source is what every source kind (GitRepository, OCIRepository,
// HelmRepository, HelmChart, Bucket, ExternalArtifact) offers its consumers, as Flux's source API
// defines it: the artifact it last stored.
//
// +kubebuilder:object:generate=false
type Source interface {
	runtime.Object
	// GetArtifact returns status.artifact: nil until the source stored
	// one. An OCI HelmRepository never has one.
	GetArtifact() *meta.Artifact
}

// The source kinds are Sources.
var (
	_ Source = &GitRepository{}
	_ Source = &OCIRepository{}
	_ Source = &HelmRepository{}
	_ Source = &HelmChart{}
	_ Source = &Bucket{}
	_ Source = &ExternalArtifact{}
)

// Artifact is the artifact a source stores (Flux's meta.Artifact), under
// the source API's own name.
//
// +kubebuilder:object:generate=false
type Artifact = meta.Artifact
