package cluster

import (
	"context"
	"errors"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func fakeRegistry(secrets ...*corev1.Secret) *Registry {
	b := fake.NewClientBuilder().WithScheme(scheme.Scheme)
	for _, s := range secrets {
		s.ResourceVersion = ""
		b = b.WithObjects(s)
	}
	return &Registry{Client: b.Build(), Namespace: "argocd",
		Local: &Target{Server: argov1.InClusterServer, Name: argov1.InClusterName, Config: &rest.Config{Host: "https://local"}}}
}

func TestForResolvesLikeArgoCD(t *testing.T) {
	r := fakeRegistry(
		clusterSecret("a", map[string]string{"name": "dup", "server": "https://a"}),
		clusterSecret("b", map[string]string{"name": "dup", "server": "https://b"}),
		clusterSecret("broken", map[string]string{"name": "broken", "server": "https://broken", "config": `{"execProviderConfig":{}}`}),
	)
	other := clusterSecret("other-ns", map[string]string{"name": "elsewhere", "server": "https://elsewhere"})
	other.Namespace, other.ResourceVersion = "default", ""
	if err := r.Client.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dest    argov1.ApplicationDestination
		wantErr string
		local   bool
	}{
		{"in-cluster by server", argov1.ApplicationDestination{Server: argov1.InClusterServer}, "", true},
		{"in-cluster by server with a trailing slash", argov1.ApplicationDestination{Server: argov1.InClusterServer + "/"}, "", true},
		{"in-cluster by name", argov1.ApplicationDestination{Name: argov1.InClusterName}, "", true},
		{"both", argov1.ApplicationDestination{Name: "x", Server: "https://x"},
			"application destination can't have both name and server defined: x https://x", false},
		{"neither", argov1.ApplicationDestination{Namespace: "ns"}, "Destination server missing from app spec", false},
		{"unknown name", argov1.ApplicationDestination{Name: "nope"}, "there are no clusters with this name: nope", false},
		{"unknown server", argov1.ApplicationDestination{Server: "https://nope/"},
			`error getting cluster by server "https://nope": cluster "https://nope" not found`, false},
		{"two Secrets with one name", argov1.ApplicationDestination{Name: "dup"},
			"there are 2 clusters with the same name: [https://a https://b]", false},
		{"a Secret in another namespace is not a cluster", argov1.ApplicationDestination{Name: "elsewhere"},
			"there are no clusters with this name: elsewhere", false},
		{"an unusable Secret says why", argov1.ApplicationDestination{Name: "broken"},
			"cluster secret 'argocd/broken': execProviderConfig is not supported: Eddy does not run credential plugins; use a bearerToken or a client certificate (tlsClientConfig.certData and keyData)", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.For(context.Background(), tc.dest)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.local && got != r.Local {
				t.Errorf("got %+v, want the local target", got)
			}
		})
	}
}

func TestInClusterSecretNamesTheLocalCluster(t *testing.T) {
	r := fakeRegistry(clusterSecret("local", map[string]string{"name": "hub", "server": argov1.InClusterServer,
		"namespaces": "apps", "project": "team"}))
	ctx := context.Background()
	for _, dest := range []argov1.ApplicationDestination{{Name: "hub"}, {Server: argov1.InClusterServer}} {
		got, err := r.For(ctx, dest)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "hub" || got.Server != argov1.InClusterServer || got.Config != r.Local.Config ||
			got.Project != "team" || len(got.Namespaces) != 1 {
			t.Errorf("%v: got %+v", dest, got)
		}
	}
	// Argo CD keeps the in-cluster name resolving to the local cluster.
	if got, err := r.For(ctx, argov1.ApplicationDestination{Name: argov1.InClusterName}); err != nil || got != r.Local {
		t.Errorf("in-cluster: %+v, %v", got, err)
	}
}

func TestDeletedSecretIsForgotten(t *testing.T) {
	s := clusterSecret("local", map[string]string{"name": "hub", "server": argov1.InClusterServer})
	r := fakeRegistry(s)
	ctx := context.Background()
	first, err := r.For(ctx, argov1.ApplicationDestination{Name: "hub"})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := r.For(ctx, argov1.ApplicationDestination{Name: "hub"}); again != first {
		t.Error("an unchanged Secret's target was rebuilt")
	}
	if err := r.Client.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := r.For(ctx, argov1.ApplicationDestination{Name: "hub"}); err == nil || err.Error() != "there are no clusters with this name: hub" {
		t.Fatalf("after delete: %v", err)
	}
	if len(r.targets) != 0 {
		t.Errorf("targets still cached: %v", r.targets)
	}
}

func TestResolutionErrorsMatchErrNoCluster(t *testing.T) {
	r := fakeRegistry(clusterSecret("broken", map[string]string{"name": "broken", "server": "https://broken", "config": `{"awsAuthConfig":{}}`}))
	for _, tc := range []struct {
		dest argov1.ApplicationDestination
		want bool
	}{
		{argov1.ApplicationDestination{Name: "nope"}, true},
		{argov1.ApplicationDestination{Server: "https://nope"}, true},
		{argov1.ApplicationDestination{Name: "a", Server: "https://a"}, true},
		{argov1.ApplicationDestination{}, true},
		{argov1.ApplicationDestination{Name: "broken"}, false},
	} {
		_, err := r.For(context.Background(), tc.dest)
		if err == nil || errors.Is(err, ErrNoCluster) != tc.want {
			t.Errorf("%+v: %v, ErrNoCluster %v", tc.dest, err, tc.want)
		}
	}
}
