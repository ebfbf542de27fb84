package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/localcluster"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// remoteApp is a repository for a cluster without nodes: a ConfigMap only.
var remoteApp = map[string]string{
	"apps/remote/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: remote-config\ndata:\n  REGION: eu-west\n",
}

// clusterSecretFor declares spoke to Argo CD as cluster name, with the
// spoke's admin client certificate (argocd-contract §8.2).
func clusterSecretFor(t *testing.T, name string, spoke *localcluster.Cluster) *corev1.Secret {
	t.Helper()
	config, err := json.Marshal(map[string]any{"tlsClientConfig": map[string]any{
		"caData": spoke.Config.CAData, "certData": spoke.Config.CertData, "keyData": spoke.Config.KeyData}})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: argocd, Labels: map[string]string{argov1.LabelSecretType: "cluster"}},
		StringData: map[string]string{"name": name, "server": spoke.Config.Host, "config": string(config)},
	}
}

// TestApplicationDeploysToClusterSecret deploys an Application to a
// second cluster named by a cluster Secret: its objects land there and
// not on the controller's cluster, and deleting the Application with the
// resources finalizer deletes them there (background propagation: the
// second cluster runs no garbage collector to finish a foreground one).
func TestApplicationDeploysToClusterSecret(t *testing.T) {
	logsOnFailure(t)
	spoke, err := localcluster.Start(t.Context(), localcluster.Options{Profile: localcluster.ProfileAPI})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(spoke.Stop)
	spokeClient, err := client.New(spoke.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("spoke")
	create(t, clusterSecretFor(t, name, spoke))
	repo := gitSrv.NewRepo(t, remoteApp)
	ns := uniqueName("remote")
	app := &argov1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("remote"), Namespace: argocd, Finalizers: []string{argov1.FinalizerResourcesBackground}},
		Spec: argov1.ApplicationSpec{
			Project:     argov1.DefaultProject,
			Source:      &argov1.ApplicationSource{RepoURL: repo.URL(), TargetRevision: "main", Path: "apps/remote"},
			Destination: argov1.ApplicationDestination{Name: name, Namespace: ns},
			SyncPolicy: &argov1.SyncPolicy{Automated: &argov1.SyncPolicyAutomated{Prune: new(true)},
				SyncOptions: []string{"CreateNamespace=true"}},
		},
	}
	create(t, app)
	waitApp(t, app, "Synced and Healthy", syncedHealthy(app))

	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ns, Name: "remote-config"}
	if err := spokeClient.Get(t.Context(), key, cm); err != nil {
		t.Fatalf("on the destination cluster: %v", err)
	}
	if got := cm.Annotations[argov1.AnnotationTrackingID]; got != app.Name+":/ConfigMap:"+ns+"/remote-config" {
		t.Errorf("tracking id %q", got)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace was created on the controller's cluster: %v", err)
	}

	t.Run("an unknown cluster name is an InvalidSpecError", func(t *testing.T) {
		bad := app.DeepCopy()
		bad.ObjectMeta = metav1.ObjectMeta{Name: uniqueName("nowhere"), Namespace: argocd}
		bad.Spec.Destination = argov1.ApplicationDestination{Name: "nowhere", Namespace: ns}
		create(t, bad)
		waitApp(t, bad, "InvalidSpecError", func() bool {
			for _, c := range bad.Status.Conditions {
				if c.Type == argov1.ConditionInvalidSpecError && strings.Contains(c.Message, "there are no clusters with this name: nowhere") {
					return true
				}
			}
			return false
		})
	})

	t.Run("deleting the Application deletes its objects on the destination", func(t *testing.T) {
		if err := env.Client.Delete(t.Context(), app); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, appTimeout, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(spokeClient.Get(ctx, key, &corev1.ConfigMap{})) &&
				apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(app), &argov1.Application{})), nil
		})
		if err != nil {
			t.Fatalf("remote-config or the Application still there after %s", appTimeout)
		}
	})
}
