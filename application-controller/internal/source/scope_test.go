package source

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// TestUnscopedNamesAreUnchanged pins the names of sources without
// project-scoped credentials: objects created before scopes were part of
// the name keep being used, not recreated.
func TestUnscopedNamesAreUnchanged(t *testing.T) {
	git := argov1.ApplicationSource{RepoURL: "https://git.local/x.git", Path: "a"}
	chart := argov1.ApplicationSource{RepoURL: "https://charts.example.com", Chart: "x", TargetRevision: "1.0.0"}
	for _, c := range []struct{ got, want string }{
		{ObjectName(git, ""), "app-src-46086a48a7"},
		{ScopedObjectName(git, "", ""), "app-src-46086a48a7"},
		{ObjectName(chart, ""), "app-src-37dd653256"},
		{repositoryName(chart, ""), "app-repo-73ce958fb9"},
	} {
		if c.got != c.want {
			t.Errorf("name %q, want %q", c.got, c.want)
		}
	}
}

func TestScopedCredentialsGetObjectsOfTheirOwn(t *testing.T) {
	for _, src := range []argov1.ApplicationSource{
		{RepoURL: "https://git.local/x.git"},
		{RepoURL: "https://charts.example.com", Chart: "x", TargetRevision: "1.0.0"},
		{RepoURL: "oci://registry.local/manifests", TargetRevision: "1.0.0"},
	} {
		unscoped, a, b := ScopedObjectName(src, "", ""), ScopedObjectName(src, "", "team-a"), ScopedObjectName(src, "", "team-b")
		if unscoped == a || a == b || unscoped == b {
			t.Errorf("%s: names %s, %s, %s should differ", src.RepoURL, unscoped, a, b)
		}
		if a != ScopedObjectName(src, "", "team-a") {
			t.Errorf("%s: the scoped name is not deterministic", src.RepoURL)
		}
		if repositoryName(src, "") == repositoryName(src, "team-a") {
			t.Errorf("%s: a scoped HelmRepository shares the unscoped one's name", src.RepoURL)
		}
	}
}

// repoSecret is an Argo CD repository Secret for matchRepository.
func repoSecret(typ string, data map[string]string) corev1.Secret {
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{argov1.LabelSecretType: typ}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestMatchRepositoryScopesAsArgoCDGetRepository(t *testing.T) {
	const url = "https://git.local/private.git"
	teamA := repoSecret(secretTypeRepository, map[string]string{"url": url, "password": "a", "project": "team-a"})
	teamB := repoSecret(secretTypeRepository, map[string]string{"url": url, "password": "b", "project": "team-b"})
	global := repoSecret(secretTypeRepository, map[string]string{"url": url, "password": "g"})
	other := repoSecret(secretTypeRepository, map[string]string{"url": "https://git.local/other.git", "password": "o", "project": "team-a"})
	for _, c := range []struct {
		name      string
		secrets   []corev1.Secret
		project   string
		wantPass  string
		wantScope string
	}{
		{"scoped to the project", []corev1.Secret{teamA}, "team-a", "a", "team-a"},
		{"scoped to another project only", []corev1.Secret{teamA}, "default", "", ""},
		{"each project its own", []corev1.Secret{teamA, teamB}, "team-b", "b", "team-b"},
		{"scoped wins over unscoped", []corev1.Secret{global, teamA}, "team-a", "a", "team-a"},
		{"other projects fall back to unscoped", []corev1.Secret{teamA, global}, "default", "g", ""},
		{"unscoped only", []corev1.Secret{global}, "team-a", "g", ""},
		{"another URL's scoped Secret", []corev1.Secret{other}, "team-a", "", ""},
		{"none", nil, "team-a", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo, _, scope := matchRepository(c.secrets, c.project, url)
			if string(repo["password"]) != c.wantPass || scope != c.wantScope {
				t.Errorf("password %q scope %q, want %q %q", repo["password"], scope, c.wantPass, c.wantScope)
			}
		})
	}
}

// TestProjectScopedSecretIsNotSharedWithOtherProjects: Applications of
// two projects on one URL, one with a project-scoped Secret, get
// different source objects; the other project's has no credentials and
// leaves the scoped object's Secret alone.
func TestProjectScopedSecretIsNotSharedWithOtherProjects(t *testing.T) {
	ctx := context.Background()
	for _, src := range []argov1.ApplicationSource{
		{RepoURL: "https://git.example.com/acme/private.git"},
		{RepoURL: "https://charts.example.com/private", Chart: "x", TargetRevision: "1.0.0"},
	} {
		m := newManager(t)
		argoSecret(t, m, "team-a", "repository", map[string]string{"url": src.RepoURL, "username": "a", "password": "team-a-pass", "project": "team-a"})
		appA, appB := app("a", src), app("b", src)
		appA.Spec.Project = "team-a"
		_, err := m.Ensure(ctx, appA, src, "")
		asNotReady(t, err)
		_, err = m.Ensure(ctx, appB, src, "")
		asNotReady(t, err)
		nameA, err := m.ObjectNameFor(ctx, appA, src, "")
		if err != nil {
			t.Fatal(err)
		}
		nameB, _ := m.ObjectNameFor(ctx, appB, src, "")
		if nameA != ScopedObjectName(src, "", "team-a") || nameB != ObjectName(src, "") {
			t.Fatalf("%s: names %s and %s", src.RepoURL, nameA, nameB)
		}
		secretName := nameA
		if src.Chart != "" {
			secretName = repositoryName(src, "team-a")
			if ok := has(t, m, &sourcev1.HelmRepository{}, repositoryName(src, "")); !ok {
				t.Errorf("no unscoped HelmRepository for the other project")
			}
			if has(t, m, &corev1.Secret{}, repositoryName(src, "")) {
				t.Errorf("the other project's HelmRepository has a Secret")
			}
		} else if has(t, m, &corev1.Secret{}, nameB) {
			t.Errorf("the other project's GitRepository has a Secret")
		}
		if got := derived(t, m, secretName); got["password"] != "team-a-pass" {
			t.Errorf("%s: team-a's Secret %v", src.RepoURL, got)
		}
	}
}

// TestGCDeletesTheObjectOfAScopeGone: when the project-scoped Secret is
// deleted, the project's Application moves to the unscoped object and GC
// deletes the scoped one and its Secret.
func TestGCDeletesTheObjectOfAScopeGone(t *testing.T) {
	ctx := context.Background()
	m := newManager(t)
	src := argov1.ApplicationSource{RepoURL: "https://git.example.com/acme/private.git"}
	s := argoSecret(t, m, "team-a", "repository", map[string]string{"url": src.RepoURL, "password": "p", "project": "team-a"})
	a := app("a", src)
	a.Spec.Project = "team-a"
	_, err := m.Ensure(ctx, a, src, "")
	asNotReady(t, err)
	scoped := ScopedObjectName(src, "", "team-a")
	if err := m.GC(ctx, []argov1.Application{*a}); err != nil {
		t.Fatal(err)
	}
	if !has(t, m, &sourcev1.GitRepository{}, scoped) || !has(t, m, &corev1.Secret{}, scoped) {
		t.Fatal("GC deleted the object in use")
	}
	if err := m.Refresh(ctx, a, src, ""); err != nil {
		t.Fatal(err)
	}
	var repo sourcev1.GitRepository
	get(t, m, &repo, scoped)
	if repo.Annotations["reconcile.fluxcd.io/requestedAt"] == "" {
		t.Error("Refresh did not ask the scoped object for a fetch")
	}
	if err := env.Client.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	_, err = m.Ensure(ctx, a, src, "")
	asNotReady(t, err)
	if err := m.GC(ctx, []argov1.Application{*a}); err != nil {
		t.Fatal(err)
	}
	if has(t, m, &sourcev1.GitRepository{}, scoped) || has(t, m, &corev1.Secret{}, scoped) {
		t.Error("the scoped object or its Secret outlived the Secret that scoped it")
	}
	if !has(t, m, &sourcev1.GitRepository{}, ObjectName(src, "")) {
		t.Error("no unscoped object after the scoped Secret went")
	}
}

// has reports whether obj name exists in m's namespace.
func has(t *testing.T, m *Manager, obj client.Object, name string) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: m.Namespace, Name: name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}
