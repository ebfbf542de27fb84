// Package source hands Applications their sources' artifacts. The
// application-controller fetches no Git, Helm repository or registry
// itself: for each distinct source (repoURL, revision, chart, and the
// project when its repository Secret is project-scoped) it owns one
// source-controller object (GitRepository, HelmRepository and HelmChart,
// or OCIRepository) in its own namespace, so every Application on that
// source shares one fetch, and it unpacks that object's artifact once per
// digest into a cache directory.
//
// Which Applications use an object is not recorded on it: the object's
// name is a function of the source and its credential scope
// (ScopedObjectName), and GC deletes the
// objects that no Application's source names any more.
package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
)

// LabelSource marks the source objects and Secrets Ensure creates; GC
// only ever deletes objects carrying it.
const LabelSource = "eddy.dev/application-source"

// DefaultInterval is the spec.interval of created source objects when
// Manager.Interval is zero: Argo CD's 3m resync.
const DefaultInterval = 3 * time.Minute

// Manager hands Applications their sources' artifacts, unpacked on disk.
type Manager struct {
	Client    client.Client // controller-runtime client (cached reads fine)
	Namespace string        // where the source objects live (the controller's namespace, e.g. argocd)
	Fetcher   *artifact.Fetcher
	// CacheDir holds the extracted artifacts, one directory per artifact
	// digest, reused across Applications. It is bounded: see CacheMax.
	CacheDir string
	Interval time.Duration // spec.interval of created source objects (default DefaultInterval)

	// CacheMax is how many artifact directories are kept (default 64);
	// beyond it the least recently used go, but never one handed out in
	// the last CacheGrace (default 5m), so a Dir stays readable at least
	// that long after Ensure returned it.
	CacheMax   int
	CacheGrace time.Duration

	cacheMu  sync.Mutex
	lastUse  map[string]time.Time       // cache directory name → last Ensure that returned it
	inflight map[string]*sync.WaitGroup // cache directory name → extraction under way

	// noSecret holds the names of derived Secrets known not to exist:
	// only this controller creates them, so a source without credentials
	// is not asked about its Secret again at every Ensure.
	noSecret sync.Map
}

// Fetched is one source's artifact.
type Fetched struct {
	// Dir is the unpacked artifact: the repository root (Git/OCI), or the
	// chart directory (Helm chart).
	Dir string
	// Revision is Argo CD's revision: the full commit SHA for Git, the
	// chart version for Helm, the OCI digest (sha256:<hex>) for OCI.
	Revision string
	Artifact *sourcev1.Artifact
	// Object is the name of the source object holding the artifact (the
	// GitRepository, HelmChart or OCIRepository), in Manager.Namespace.
	Object string
}

// NotReady is returned (wrapped) while the source object has no artifact
// for the wanted revision yet. Message is the source object's Ready
// message (source-controller keeps it stable and secret-free), e.g. for a
// repository that cannot be reached or refuses the credentials; Stalled
// is its Stalled condition (retrying will not help until something
// changes).
type NotReady struct {
	Kind, Name, Message string
	Stalled             bool
	// Failed: the source object's Ready condition is False for its
	// current generation (its last fetch failed), not merely Unknown.
	Failed bool
}

// Error is "<Kind> <Name> is not ready: <Message>".
func (e *NotReady) Error() string {
	return fmt.Sprintf("%s %s is not ready: %s", e.Kind, e.Name, e.Message)
}

// ObjectName is the deterministic name of the source object for
// (repoURL, revision or else targetRevision, chart, tagPrefix) used with
// no credentials or unscoped ones: "app-src-" and 10 hex digits of a
// sha256. It names the GitRepository, the HelmChart (its HelmRepository
// is shared per URL: repositoryName) or the OCIRepository. An empty Git
// revision and HEAD give the same name. ScopedObjectName names the object
// of project-scoped credentials.
func ObjectName(src argov1.ApplicationSource, revision string) string {
	return ScopedObjectName(src, revision, "")
}

// ScopedObjectName is ObjectName for an Application whose repository
// Secret is scoped to the project scope (CredentialScope): that project's
// Applications get objects (and derived Secrets) of their own, as Argo CD
// hands project-scoped credentials to that project alone
// (argocd-contract §8.3). scope "" is ObjectName's name.
func ScopedObjectName(src argov1.ApplicationSource, revision, scope string) string {
	return "app-src-" + shortHash(withScope(scope, canonicalURL(src), wantedRevision(src, revision), src.Chart, src.TagPrefix)...)
}

// repositoryName names the HelmRepository of a chart source: one per
// repository URL and credential scope, shared by its charts and versions.
func repositoryName(src argov1.ApplicationSource, scope string) string {
	return "app-repo-" + shortHash(withScope(scope, canonicalURL(src))...)
}

// withScope appends a non-empty credential scope to the hashed parts; an
// unscoped source keeps the name it had before scopes were part of it.
func withScope(scope string, parts ...string) []string {
	if scope == "" {
		return parts
	}
	return append(parts, "project="+scope)
}

func shortHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:5])
}

// canonicalURL is repoURL as put in the source object's spec.url, or
// repoURL trimmed when it cannot be (Ensure then reports why).
func canonicalURL(src argov1.ApplicationSource) string {
	raw := strings.TrimSuffix(strings.TrimSpace(src.RepoURL), "/")
	switch kindOf(src) {
	case kindGit:
		if u, err := gitURL(raw); err == nil {
			return u
		}
	case kindOCIHelm:
		if !strings.HasPrefix(raw, ociURLPrefix) {
			return ociURLPrefix + raw
		}
	}
	return raw
}

// Kinds returns the source-controller object kinds Ensure creates for
// src: GitRepository; HelmRepository and HelmChart; or OCIRepository.
func Kinds(src argov1.ApplicationSource) []string {
	switch kindOf(src) {
	case kindHelm, kindOCIHelm:
		return []string{sourcev1.HelmRepositoryKind, sourcev1.HelmChartKind}
	case kindOCI:
		return []string{sourcev1.OCIRepositoryKind}
	}
	return []string{sourcev1.GitRepositoryKind}
}

// Ensure creates or updates the source object(s) for src in m.Namespace
// (revision overrides targetRevision, e.g. a rollback's commit SHA; ""
// means targetRevision), with a Secret translated from the Argo CD
// repository Secret that matches (argocd-contract §8.3), and returns the
// unpacked artifact once source-controller has one for the wanted
// revision. Until then it returns a *NotReady (wrapped). app's project
// selects project-scoped repository Secrets as Argo CD does. Other errors:
// an invalid source (a repoURL of the wrong form, tagPrefix with a semver
// constraint), API errors, and download or extraction errors.
func (m *Manager) Ensure(ctx context.Context, app *argov1.Application, src argov1.ApplicationSource, revision string) (*Fetched, error) {
	project := projectOf(app)
	switch kindOf(src) {
	case kindHelm, kindOCIHelm:
		return m.ensureHelm(ctx, project, src, revision)
	case kindOCI:
		return m.ensureOCI(ctx, project, src, revision)
	}
	return m.ensureGit(ctx, project, src, revision)
}

// projectOf is app's project, the default project for nil.
func projectOf(app *argov1.Application) string {
	if app == nil {
		return argov1.DefaultProject
	}
	return app.GetProject()
}

// CredentialScope is the project whose scoped repository Secret serves
// an Application of project on repoURL: project when the repository
// Secret that matches (repoData's choice, Argo CD's GetRepository(url,
// project), argocd-contract §8.3) carries `project: <project>`, "" when
// it is unscoped or there is none. Errors are API errors listing Secrets.
func (m *Manager) CredentialScope(ctx context.Context, project, repoURL string) (string, error) {
	secrets, err := m.repoSecrets(ctx)
	if err != nil {
		return "", err
	}
	_, _, scope := matchRepository(secrets, project, repoURL)
	return scope, nil
}

// ObjectNameFor is the name of the source object Ensure keeps for app's
// src at revision (ScopedObjectName with app's CredentialScope): the
// GitRepository, HelmChart or OCIRepository holding the artifact.
// Errors are API errors listing Secrets.
func (m *Manager) ObjectNameFor(ctx context.Context, app *argov1.Application, src argov1.ApplicationSource, revision string) (string, error) {
	scope, err := m.CredentialScope(ctx, projectOf(app), src.RepoURL)
	if err != nil {
		return "", err
	}
	return ScopedObjectName(src, revision, scope), nil
}

// interval is spec.interval of the objects created.
func (m *Manager) interval() time.Duration {
	if m.Interval > 0 {
		return m.Interval
	}
	return DefaultInterval
}

// notReady describes an object without the wanted artifact from its
// Ready and Stalled conditions; waiting is the message before
// source-controller reported anything for this generation.
func notReady(kind string, obj client.Object, conds []metav1.Condition, waiting string) *NotReady {
	e := &NotReady{Kind: kind, Name: obj.GetName(), Message: waiting}
	for _, c := range conds {
		if c.ObservedGeneration != 0 && c.ObservedGeneration != obj.GetGeneration() {
			continue
		}
		switch {
		case c.Type == meta.ReadyCondition && c.Status != "True" && c.Message != "":
			e.Message, e.Failed = c.Message, c.Status == metav1.ConditionFalse
		case c.Type == meta.StalledCondition && c.Status == "True":
			e.Stalled = true
		}
	}
	return e
}
