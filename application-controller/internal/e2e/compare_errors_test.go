package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// refusedApp waits for app's condition typ containing msg with sync
// Unknown and a Warning event of that reason, and checks nothing of it
// was applied in namespace ns (configMap names one of its objects).
func refusedApp(t *testing.T, app *argov1.Application, typ, msg, ns, configMap string) {
	t.Helper()
	waitApp(t, app, typ+" "+msg, func() bool {
		return app.Status.Sync.Status == argov1.SyncStatusUnknown && hasCondition(app, typ, msg) && warningEvent(t, app, typ, msg)
	})
	if app.Status.OperationState != nil || len(app.Status.History) != 0 {
		t.Errorf("a refused app ran a sync: %+v", app.Status.OperationState)
	}
	if configMap != "" {
		err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: configMap}, &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s was applied (err %v)", configMap, err)
		}
	}
}

// TestCompareProjectViolationsAreInvalidSpecErrors: an unknown project, a
// repository outside sourceRepos, a destination outside destinations, and
// a cluster-scoped object under an empty clusterResourceWhitelist each
// give InvalidSpecError with Argo CD's message, sync Unknown, a Warning
// event, and nothing applied (argocd-contract §2, §8.1).
func TestCompareProjectViolationsAreInvalidSpecErrors(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	repo := gitSrv.NewRepo(t, map[string]string{
		"app/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: v\n",
		"cluster/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + uniqueName("cluster-ns") + "\n",
		"cluster/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  k: v\n",
	})
	proj := func(name string, spec argov1.AppProjectSpec) string {
		p := &argov1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: uniqueName(name), Namespace: argocd}, Spec: spec}
		create(t, p)
		return p.Name
	}
	anyDest := []argov1.ApplicationDestination{{Server: "*", Namespace: "*"}}
	cases := []struct {
		name, project, path, msg string
	}{
		{"unknown project", "no-such-project", "app", "Application referencing project no-such-project which does not exist"},
		{"source repo", proj("only-example", argov1.AppProjectSpec{SourceRepos: []string{"https://example.com/*"}, Destinations: anyDest}), "app",
			"application repo " + repo.URL() + " is not permitted in project '"},
		{"destination", proj("only-staging", argov1.AppProjectSpec{SourceRepos: []string{"*"}, Destinations: []argov1.ApplicationDestination{{Server: "*", Namespace: "staging"}}}), "app",
			"application destination server 'https://kubernetes.default.svc' and namespace '"},
		{"cluster resource", proj("no-cluster", argov1.AppProjectSpec{SourceRepos: []string{"*"}, Destinations: anyDest}), "cluster",
			"resource :Namespace is not permitted in project no-cluster-"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := uniqueName("project")
			app := exampleApp(uniqueName("violation"), repo.URL(), tc.path, ns, nil)
			app.Spec.Project = tc.project
			create(t, app)
			refusedApp(t, app, argov1.ConditionInvalidSpecError, tc.msg, ns, "cm")
			if tc.name == "destination" && !strings.Contains(app.Status.Conditions[0].Message, "do not match any of the allowed destinations in project") {
				t.Errorf("condition %q", app.Status.Conditions[0].Message)
			}
		})
	}
}

// TestCompareBadInputIsAClearComparisonError: a chart with dependencies
// not vendored, a config management plugin, a path outside the
// repository and a repository whose Secret has a wrong password each give
// ComparisonError with a stable message free of the password, sync
// Unknown, a Warning event, and nothing applied; jsonnet that stops
// evaluating in a synced app leaves its objects and history as they were.
func TestCompareBadInputIsAClearComparisonError(t *testing.T) {
	t.Parallel()
	logsOnFailure(t)
	examples := exampleRepo(t)
	cases := []struct {
		name string
		src  argov1.ApplicationSource
		msg  string
	}{
		{"helm dependency", argov1.ApplicationSource{RepoURL: examples.URL(), TargetRevision: "HEAD", Path: "helm-dependency"},
			"Failed to load target state: failed to generate manifest for source 1 of 1: chart \"wordpress\" has dependencies that are not vendored"},
		{"plugin", argov1.ApplicationSource{RepoURL: examples.URL(), TargetRevision: "HEAD", Path: "plugins/kasane", Plugin: &argov1.ApplicationSourcePlugin{Name: "kasane"}},
			"config management plugins are not supported by Eddy"},
		{"path outside", argov1.ApplicationSource{RepoURL: examples.URL(), TargetRevision: "HEAD", Path: "../guestbook"},
			"is outside the repository"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := uniqueName("bad")
			app := exampleApp(uniqueName("bad"), examples.URL(), "", ns, nil)
			app.Spec.Source = &tc.src
			create(t, app)
			refusedApp(t, app, argov1.ConditionComparisonError, tc.msg, ns, "")
			if strings.Contains(app.Status.Conditions[0].Message, "/tmp/") {
				t.Errorf("the message holds a temporary path: %q", app.Status.Conditions[0].Message)
			}
		})
	}
	t.Run("wrong repository password", func(t *testing.T) {
		t.Parallel()
		repo := gitSrv.NewRepo(t, twoConfigMaps)
		srv, err := gitserver.Start(gitserver.Options{Root: gitSrv.Root, Username: "git", Password: "right-pass"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		url := srv.URL + "/" + repo.Name
		create(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName("repo"), Namespace: argocd, Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
			StringData: map[string]string{"url": url, "username": "git", "password": "wr0ng-pass"},
		})
		ns := uniqueName("creds")
		app := exampleApp(uniqueName("creds"), url, "app", ns, nil)
		create(t, app)
		refusedApp(t, app, argov1.ConditionComparisonError, "authentication required", ns, "a")
		if msg := app.Status.Conditions[0].Message; strings.Contains(msg, "wr0ng-pass") || strings.Contains(msg, "right-pass") {
			t.Errorf("the condition holds a password: %q", msg)
		}
		t.Logf("wrong password: %s", app.Status.Conditions[0].Message)
	})
	t.Run("a repository password that goes wrong", func(t *testing.T) {
		t.Parallel()
		repo := gitSrv.NewRepo(t, twoConfigMaps)
		srv, err := gitserver.Start(gitserver.Options{Root: gitSrv.Root, Username: "git", Password: "right-pass"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		url := srv.URL + "/" + repo.Name
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName("repo"), Namespace: argocd, Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
			StringData: map[string]string{"url": url, "username": "git", "password": "right-pass"},
		}
		create(t, secret)
		ns := uniqueName("creds")
		app := exampleApp(uniqueName("creds"), url, "app", ns, nil)
		create(t, app)
		waitApp(t, app, "Synced and Healthy", syncedHealthy(app))
		if err := env.Client.Patch(t.Context(), secret, client.RawPatch("application/merge-patch+json", []byte(`{"stringData":{"password":"wr0ng-pass"}}`))); err != nil {
			t.Fatal(err)
		}
		// The next comparison hands the new password to source-controller;
		// the commit after that is fetched with it.
		refresh(t, app)
		waitDerivedPassword(t, url, "wr0ng-pass")
		repo.MustCommit(t, map[string]string{"app/b.yaml": ""}, "drop b")
		refresh(t, app)
		waitApp(t, app, "ComparisonError", func() bool {
			return app.Status.Sync.Status == argov1.SyncStatusUnknown && hasCondition(app, argov1.ConditionComparisonError, "authentication required") &&
				warningEvent(t, app, argov1.ConditionComparisonError, "authentication required")
		})
		if msg := app.Status.Conditions[0].Message; strings.Contains(msg, "wr0ng-pass") || strings.Contains(msg, "right-pass") {
			t.Errorf("the condition holds a password: %q", msg)
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "b"}, &corev1.ConfigMap{}); err != nil || len(app.Status.History) != 1 {
			t.Errorf("the synced state changed: b %v, %d history entries", err, len(app.Status.History))
		}
	})
	t.Run("jsonnet that does not evaluate", func(t *testing.T) {
		t.Parallel()
		repo := gitSrv.NewRepo(t, twoConfigMaps)
		ns := uniqueName("jsonnet")
		app := exampleApp(uniqueName("jsonnet"), repo.URL(), "app", ns, nil)
		create(t, app)
		waitApp(t, app, "Synced and Healthy", syncedHealthy(app))
		repo.MustCommit(t, map[string]string{"app/b.yaml": "", "app/bad.jsonnet": "{ a: error 'broken on purpose' }\n"}, "bad jsonnet")
		refresh(t, app)
		waitApp(t, app, "ComparisonError", func() bool {
			return hasCondition(app, argov1.ConditionComparisonError, "broken on purpose") && warningEvent(t, app, argov1.ConditionComparisonError, "broken on purpose")
		})
		if app.Status.Sync.Status != argov1.SyncStatusUnknown || len(app.Status.History) != 1 {
			t.Errorf("sync %q, %d history entries; want Unknown and the one sync", app.Status.Sync.Status, len(app.Status.History))
		}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "b"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("b, removed in the broken commit, was pruned: %v", err)
		}
		t.Logf("jsonnet: %s", app.Status.Conditions[0].Message)
	})
}

// waitDerivedPassword waits until the Secret of the GitRepository of url
// holds password.
func waitDerivedPassword(t *testing.T, url, password string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, appTimeout, true, func(ctx context.Context) (bool, error) {
		var list sourcev1.GitRepositoryList
		if err := env.Client.List(ctx, &list, client.InNamespace(argocd)); err != nil {
			return false, nil
		}
		for _, g := range list.Items {
			if g.Spec.URL != url || g.Spec.SecretRef == nil {
				continue
			}
			s := &corev1.Secret{}
			if env.Client.Get(ctx, client.ObjectKey{Namespace: argocd, Name: g.Spec.SecretRef.Name}, s) == nil && string(s.Data["password"]) == password {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the GitRepository of %s never got the new password", url)
	}
}
