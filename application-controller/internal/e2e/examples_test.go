package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/testenv"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// exampleRepo pushes Argo CD's argocd-example-apps, whole, to a new
// repository of the Git server.
func exampleRepo(t *testing.T) *testenv.Repo {
	t.Helper()
	root := filepath.Join(testenv.TestdataDir(t), "repos", "argocd-example-apps")
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return gitSrv.NewRepo(t, files)
}

// exampleApp is the Application of one example directory, as
// argocd-contract §9 assumes: automated prune and self-heal,
// CreateNamespace, destination namespace of its own.
func exampleApp(name, url, path, namespace string, helm *argov1.ApplicationSourceHelm) *argov1.Application {
	t := true
	return &argov1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argocd},
		Spec: argov1.ApplicationSpec{
			Project:     "default",
			Source:      &argov1.ApplicationSource{RepoURL: url, TargetRevision: "HEAD", Path: path, Helm: helm},
			Destination: argov1.ApplicationDestination{Server: argov1.InClusterServer, Namespace: namespace},
			SyncPolicy: &argov1.SyncPolicy{Automated: &argov1.SyncPolicyAutomated{Prune: &t, SelfHeal: &t},
				SyncOptions: []string{"CreateNamespace=true"}},
		},
	}
}

// TestArgoCDExampleApps runs each directory of argocd-example-apps as an
// Application and checks the end state argocd-contract §9 lists: the
// source type, the objects, sync and health (kwok nodes run the Pods and
// complete the Jobs; nothing gives a LoadBalancer Service or an Ingress
// an address, so those stay Progressing).
func TestArgoCDExampleApps(t *testing.T) {
	logsOnFailure(t)
	repo := exampleRepo(t)
	cases := []struct {
		dir, sourceType, health string
		helm                    *argov1.ApplicationSourceHelm
		objects                 []string // Kind/name that must be in status.resources
	}{
		{dir: "guestbook", sourceType: "Directory", health: "Healthy", objects: []string{"Service/guestbook-ui", "Deployment/guestbook-ui"}},
		{dir: "kustomize-guestbook", sourceType: "Kustomize", health: "Healthy", objects: []string{"Service/kustomize-guestbook-ui", "Deployment/kustomize-guestbook-ui"}},
		{dir: "helm-guestbook", sourceType: "Helm", health: "Healthy", objects: []string{"Service/helm-guestbook", "Deployment/helm-guestbook"}},
		{dir: "helm-guestbook", sourceType: "Helm", health: "Progressing", helm: &argov1.ApplicationSourceHelm{ValueFiles: []string{"values-production.yaml"}},
			objects: []string{"Service/helm-guestbook", "Deployment/helm-guestbook"}},
		{dir: "jsonnet-guestbook", sourceType: "Directory", health: "Progressing", objects: []string{"Service/jsonnet-guestbook-ui", "Deployment/jsonnet-guestbook-ui"}},
		{dir: "sync-waves", sourceType: "Directory", health: "Healthy", objects: []string{"Service/backend", "ReplicaSet/backend", "Service/frontend", "ReplicaSet/frontend"}},
		{dir: "helm-hooks", sourceType: "Directory", health: "Healthy", objects: []string{"Service/frontend", "ReplicaSet/frontend"}},
		{dir: "pre-post-sync", sourceType: "Kustomize", health: "Healthy", objects: []string{"Service/pre-post-sync-kustomize-guestbook-ui", "Deployment/pre-post-sync-kustomize-guestbook-ui"}},
		{dir: "sock-shop", sourceType: "Kustomize", health: "Progressing", objects: []string{"Deployment/carts", "Service/front-end", "Ingress/front-end-ingress"}},
	}
	for _, tc := range cases {
		name := tc.dir
		if tc.helm != nil {
			name += "-production"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			app := exampleApp(name, repo.URL(), tc.dir, uniqueName(name), tc.helm)
			if tc.helm != nil {
				app.Spec.Source.Helm.ReleaseName = "helm-guestbook"
			}
			create(t, app)
			waitApp(t, app, "Synced and "+tc.health, func() bool {
				return app.Status.Sync.Status == argov1.SyncStatusSynced && app.Status.Health.Status == tc.health &&
					app.Status.OperationState != nil && app.Status.OperationState.Phase == argov1.OperationSucceeded
			})
			if app.Status.SourceType != tc.sourceType {
				t.Errorf("sourceType %q, want %q", app.Status.SourceType, tc.sourceType)
			}
			have := map[string]bool{}
			for _, r := range app.Status.Resources {
				have[r.Kind+"/"+r.Name] = true
			}
			for _, o := range tc.objects {
				if !have[o] {
					t.Errorf("status.resources lacks %s: %v", o, keys(have))
				}
			}
		})
	}
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return strings.Join(out, " ")
}
