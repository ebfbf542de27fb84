package webui

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/pkg/appdiff"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

const (
	guestbookCommit = "0123456789abcdef0123456789abcdef01234567"
	olderCommit     = "fedcba9876543210fedcba9876543210fedcba98"
)

// appFixture creates a namespace with the Application guestbook, its status
// written as application-controller writes it after a successful sync:
// Synced and Healthy, a Service and a Deployment, two history entries, the
// sync's operation state.
func appFixture(t *testing.T) (string, *argov1.Application) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ui-app-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	src := argov1.ApplicationSource{RepoURL: "https://example.com/argocd-example-apps.git", Path: "guestbook", TargetRevision: "HEAD"}
	started := metav1.NewTime(time.Now().Add(-2 * time.Minute).Truncate(time.Second))
	finished := metav1.NewTime(started.Add(5 * time.Second))
	a := &argov1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "guestbook"},
		Spec: argov1.ApplicationSpec{Project: "default", Source: src.DeepCopy(),
			Destination: argov1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "guestbook"}},
		Status: argov1.ApplicationStatus{
			Sync:   argov1.SyncStatus{Status: argov1.SyncStatusSynced, Revision: guestbookCommit},
			Health: argov1.AppHealthStatus{Status: argov1.HealthHealthy},
			Resources: []argov1.ResourceStatus{
				{Version: "v1", Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: argov1.SyncStatusSynced, Health: &argov1.HealthStatus{Status: argov1.HealthHealthy}},
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", Status: argov1.SyncStatusSynced, Health: &argov1.HealthStatus{Status: argov1.HealthHealthy}},
			},
			History: []argov1.RevisionHistory{
				{ID: 0, Revision: olderCommit, DeployedAt: metav1.NewTime(started.Add(-time.Hour)), Source: src, InitiatedBy: argov1.OperationInitiator{Username: "alice"}},
				{ID: 1, Revision: guestbookCommit, DeployedAt: finished, Source: src, InitiatedBy: argov1.OperationInitiator{Username: "bob"}},
			},
			OperationState: &argov1.OperationState{
				Operation: argov1.Operation{Sync: &argov1.SyncOperation{Revision: guestbookCommit}, InitiatedBy: argov1.OperationInitiator{Username: "bob"}},
				Phase:     argov1.OperationSucceeded, Message: "successfully synced (all tasks run)",
				SyncResult: &argov1.SyncOperationResult{Revision: guestbookCommit, Source: src},
				StartedAt:  started, FinishedAt: &finished,
			},
		},
	}
	if err := env.Client.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	return ns.Name, a
}

// driftApp turns the fixture OutOfSync as the controller would after a
// `kubectl edit`: the Deployment OutOfSync, its replicas and a Secret's
// value in the diff annotation (the Secret's masked by appdiff.Encode).
func driftApp(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	a := &argov1.Application{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "guestbook"}, a); err != nil {
		t.Fatal(err)
	}
	diff, err := appdiff.Encode([]appdiff.Object{
		{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui",
			Fields: []appdiff.Field{{Path: "/spec/replicas", Live: json.RawMessage(`3`), Desired: json.RawMessage(`1`), Manager: "kubectl-edit"}}},
		{Kind: "Secret", Namespace: "guestbook", Name: "creds",
			Fields: []appdiff.Field{{Path: "/data/password", Live: json.RawMessage(`"aHVudGVyMg=="`), Desired: json.RawMessage(`"c2VjcmV0"`)}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Annotations = map[string]string{appdiff.Annotation: diff}
	a.Status.Sync.Status = argov1.SyncStatusOutOfSync
	a.Status.Resources[1].Status = argov1.SyncStatusOutOfSync
	a.Status.Resources = append(a.Status.Resources, argov1.ResourceStatus{Version: "v1", Kind: "Secret", Namespace: "guestbook", Name: "creds", Status: argov1.SyncStatusOutOfSync})
	if err := env.Client.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
}

func getApp(t *testing.T, ns string) *argov1.Application {
	t.Helper()
	a := &argov1.Application{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "guestbook"}, a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestApplicationsAPI: /api/objects lists the Application with its sync
// and health statuses, /api/app gives its page's data (resources, history
// newest first, operation, the pending diff with the Secret masked), and
// POST .../sync writes the operation `eddy app sync` writes, once.
func TestApplicationsAPI(t *testing.T) {
	ns, _ := appFixture(t)
	base := serve(t, Options{Config: env.Config})
	var objs Objects
	getJSON(t, base+"api/objects", &objs)
	var row *AppSummary
	for i := range objs.Apps {
		if objs.Apps[i].Namespace == ns {
			row = &objs.Apps[i]
		}
	}
	if row == nil {
		t.Fatalf("no Application of %s in /api/objects: %+v", ns, objs.Apps)
	}
	want := AppSummary{Ref: Ref{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: ns, Name: "guestbook"},
		Project: "default", Sync: "Synced", Health: "Healthy", SyncPolicy: "Manual", Revision: guestbookCommit,
		RepoURL: "https://example.com/argocd-example-apps.git", Path: "guestbook", TargetRevision: "HEAD",
		DestServer: "https://kubernetes.default.svc", DestNamespace: "guestbook", Conditions: "<none>", OperationPhase: "Succeeded"}
	if *row != want {
		t.Errorf("overview row:\n got %+v\nwant %+v", *row, want)
	}
	for _, o := range objs.Objects {
		if o.Kind == "Application" {
			t.Errorf("an Application among the Flux objects: %+v", o)
		}
	}

	driftApp(t, ns)
	var d AppDetail
	waitUntil(t, "the page data shows the pending diff", func() bool {
		d = AppDetail{}
		return getJSON(t, base+"api/app/"+ns+"/guestbook", &d) == 200 && len(d.Diff) == 2
	})
	if d.SyncStatus != "OutOfSync from HEAD (0123456)" || !d.CanSync || d.Summary.Sync != "OutOfSync" {
		t.Errorf("detail: syncStatus %q canSync %v sync %q", d.SyncStatus, d.CanSync, d.Summary.Sync)
	}
	wantRes := []AppResource{ // no sync result objects: by group, kind, namespace, name
		{Kind: "Secret", Namespace: "guestbook", Name: "creds", Status: "OutOfSync"},
		{Kind: "Service", Namespace: "guestbook", Name: "guestbook-ui", Status: "Synced", Health: "Healthy"},
		{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", Status: "OutOfSync", Health: "Healthy"},
	}
	if got := string(must(json.Marshal(d.Resources))); got != string(must(json.Marshal(wantRes))) {
		t.Errorf("resources:\n got %s\nwant %s", got, must(json.Marshal(wantRes)))
	}
	if len(d.History) != 2 || d.History[0].ID != 1 || d.History[0].Revision != "HEAD (0123456)" || d.History[0].InitiatedBy != "bob" {
		t.Errorf("history, newest first: %+v", d.History)
	}
	if op := d.Operation; op == nil || op.Phase != "Succeeded" || op.Revision != guestbookCommit || op.FinishedAt == nil {
		t.Errorf("operation: %+v", op)
	}
	wantDiff := []AppDiffObject{
		{Group: "apps", Kind: "Deployment", Namespace: "guestbook", Name: "guestbook-ui", Fields: []AppDiffField{{Path: "/spec/replicas", Live: "3", Desired: "1", Manager: "kubectl-edit"}}},
		{Kind: "Secret", Namespace: "guestbook", Name: "creds", Fields: []AppDiffField{{Path: "/data/password", Live: `"++++++++"`, Desired: `"+++++++++"`}}},
	}
	if got, _ := json.Marshal(d.Diff); string(got) != string(must(json.Marshal(wantDiff))) {
		t.Errorf("diff:\n got %s\nwant %s", got, must(json.Marshal(wantDiff)))
	}
	if raw := string(must(json.Marshal(d))); strings.Contains(raw, "aHVudGVyMg") || strings.Contains(raw, "c2VjcmV0") {
		t.Errorf("a Secret's value reached the page data: %s", raw)
	}
	if code := getJSON(t, base+"api/object/Application/"+ns+"/guestbook", nil); code != http.StatusBadRequest {
		t.Errorf("/api/object for an Application: %d, want 400", code)
	}

	var sess Session
	getJSON(t, base+"api/session", &sess)
	app := Ref{Kind: "Application", Namespace: ns, Name: "guestbook"}
	if code, _ := post(t, base+"api/action/reconcile", sess.CSRFToken, Action{Ref: app}); code != http.StatusBadRequest {
		t.Errorf("reconcile of an Application: %d, want 400", code)
	}
	syncURL := base + "api/app/" + ns + "/guestbook/sync"
	if code, _ := post(t, syncURL, "", AppSync{}); code != http.StatusForbidden {
		t.Errorf("sync without the CSRF token: %d", code)
	}
	code, res := post(t, syncURL, sess.CSRFToken, AppSync{Prune: true})
	if code != http.StatusOK || !strings.Contains(res["message"], "sync (prune) requested by") {
		t.Fatalf("sync: %d %v", code, res)
	}
	a := getApp(t, ns)
	if a.Operation == nil || a.Operation.Sync == nil || !a.Operation.Sync.Prune || a.Operation.Sync.Source == nil ||
		a.Operation.Sync.Source.RepoURL != "https://example.com/argocd-example-apps.git" || a.Operation.Sync.SyncStrategy.Hook == nil ||
		a.Operation.InitiatedBy.Username != sess.User || a.Status.OperationState != nil {
		t.Errorf("the operation written: %+v (initiated by %+v), operationState %+v", a.Operation.Sync, a.Operation.InitiatedBy, a.Status.OperationState)
	}
	if code, res := post(t, syncURL, sess.CSRFToken, AppSync{}); code != http.StatusConflict || !strings.Contains(res["error"], "another operation is already in progress") {
		t.Errorf("a second sync: %d %v, want 409", code, res)
	}
}

// TestApplicationsViewerCannotSync: a user who may read Applications but
// not patch them gets canSync false, and a sync is refused with 403.
func TestApplicationsViewerCannotSync(t *testing.T) {
	ns, _ := appFixture(t)
	cfg := appViewer(t)
	base := serve(t, Options{Config: cfg})
	var d AppDetail
	if code := getJSON(t, base+"api/app/"+ns+"/guestbook", &d); code != 200 || d.CanSync {
		t.Fatalf("viewer's page data: %d, canSync %v", code, d.CanSync)
	}
	var sess Session
	getJSON(t, base+"api/session", &sess)
	if code, res := post(t, base+"api/app/"+ns+"/guestbook/sync", sess.CSRFToken, AppSync{}); code != http.StatusForbidden {
		t.Errorf("viewer's sync: %d %v, want 403", code, res)
	}
	if getApp(t, ns).Operation != nil {
		t.Error("the viewer's refused sync wrote an operation")
	}
}

// appViewer is a client configuration impersonating app-viewer, who may
// get, list and watch Applications (nothing else).
func appViewer(t *testing.T) *rest.Config {
	t.Helper()
	ctx := context.Background()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{GenerateName: "app-viewer-"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"}, Verbs: []string{"get", "list", "watch"}}}}
	if err := env.Client.Create(ctx, cr); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "app-viewer-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "app-viewer"}}}
	if err := env.Client.Create(ctx, crb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, crb); _ = env.Client.Delete(ctx, cr) })
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "app-viewer"}
	return cfg
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestAppHistoryNewestFirstPerSource(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	git := argov1.ApplicationSource{RepoURL: "https://example.com/a.git", TargetRevision: "main"}
	chart := argov1.ApplicationSource{RepoURL: "https://charts.example.com", Chart: "web", TargetRevision: "1.2.3"}
	tests := []struct {
		name string
		in   []argov1.RevisionHistory
		want []AppHistory
	}{
		{"none", nil, []AppHistory{}},
		{"single source, newest first, commit shortened", []argov1.RevisionHistory{
			{ID: 0, Revision: olderCommit, DeployedAt: at, Source: git, InitiatedBy: argov1.OperationInitiator{Username: "alice"}},
			{ID: 1, Revision: guestbookCommit, DeployedAt: at, Source: git, InitiatedBy: argov1.OperationInitiator{Automated: true}},
		}, []AppHistory{
			{ID: 1, DeployedAt: at.Time, RepoURL: git.RepoURL, Revision: "main (0123456)", InitiatedBy: "automated"},
			{ID: 0, DeployedAt: at.Time, RepoURL: git.RepoURL, Revision: "main (fedcba9)", InitiatedBy: "alice"},
		}},
		{"multi-source: one row per source; a chart version is not shortened", []argov1.RevisionHistory{
			{ID: 4, DeployedAt: at, Sources: []argov1.ApplicationSource{git, chart}, Revisions: []string{guestbookCommit, "1.2.3"}},
		}, []AppHistory{
			{ID: 4, DeployedAt: at.Time, RepoURL: git.RepoURL, Revision: "main (0123456)"},
			{ID: 4, DeployedAt: at.Time, RepoURL: chart.RepoURL, Revision: "1.2.3"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := string(must(json.Marshal(appHistory(tt.in)))), string(must(json.Marshal(tt.want)))
			if got != want {
				t.Errorf("\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestApplicationSourcesHiddenFromOverview: the GitRepository
// application-controller creates for an Application's source (label
// eddy.dev/application-source) is not among the overview's Flux objects;
// the user's own GitRepository beside it is.
func TestApplicationSourcesHiddenFromOverview(t *testing.T) {
	ns, _ := appFixture(t)
	ctx := context.Background()
	for name, labels := range map[string]map[string]string{"app-src-0a1b2c3d": {kinds.ApplicationSourceLabel: "true"}, "mine": nil} {
		repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/repo.git", Interval: metav1.Duration{Duration: time.Minute}}}
		if err := env.Client.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
	}
	base := serve(t, Options{Config: env.Config})
	var names []string
	waitUntil(t, "the overview lists the user's GitRepository", func() bool {
		var objs Objects
		getJSON(t, base+"api/objects", &objs)
		names = nil
		for _, o := range objs.Objects {
			if o.Namespace == ns {
				names = append(names, o.Kind+"/"+o.Name)
			}
		}
		return len(names) > 0
	})
	if strings.Join(names, ",") != "GitRepository/mine" {
		t.Errorf("overview objects of %s: %v, want only GitRepository/mine", ns, names)
	}
}
