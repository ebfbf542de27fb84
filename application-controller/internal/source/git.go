package source

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// waitingMessage is NotReady's message before source-controller reported
// on the object.
const waitingMessage = "waiting for source-controller to store an artifact"

// ensureGit keeps the GitRepository of src, and its Secret, as wanted,
// and returns its artifact when it matches the wanted ref. A branch that
// the remote does not have is tried as a tag: Argo CD resolves a plain
// name as either (argocd-contract §1.3), GitRepository needs to be told.
func (m *Manager) ensureGit(ctx context.Context, project string, src argov1.ApplicationSource, revision string) (*Fetched, error) {
	u, err := gitURL(src.RepoURL)
	if err != nil {
		return nil, err
	}
	ref, err := gitRef(wantedRevision(src, revision), src.TagPrefix)
	if err != nil {
		return nil, err
	}
	argo, scope, err := m.repoData(ctx, project, src.RepoURL)
	if err != nil {
		return nil, err
	}
	u, argo = withURLCredentials(u, argo)
	data, err := m.gitSecretData(ctx, argo, u)
	if err != nil {
		return nil, err
	}
	obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: ScopedObjectName(src, revision, scope)}}
	if err := m.presetSecret(ctx, obj.Name, data, corev1.SecretTypeOpaque); err != nil {
		return nil, err
	}
	_, err = controllerutil.CreateOrUpdate(ctx, m.Client, obj, func() error {
		setLabel(obj)
		followSymlinks(obj)
		obj.Spec.URL = u
		obj.Spec.Interval = metav1.Duration{Duration: m.interval()}
		obj.Spec.SecretRef = secretRef(obj.Name, data)
		// Keep a switch to the tag or commit of the same name (see below).
		if cur := obj.Spec.Reference; ref.Branch == "" || cur == nil || !switchedFrom(cur, ref.Branch) {
			obj.Spec.Reference = ref
		}
		return nil
	})
	if err != nil {
		return nil, objectError(sourcev1.GitRepositoryKind, obj.Name, err)
	}
	if _, err := m.syncSecret(ctx, obj, gitGVK, data, corev1.SecretTypeOpaque); err != nil {
		return nil, err
	}
	if art := obj.Status.Artifact; art != nil && matchesRef(obj.Spec.Reference, art.Revision) {
		dir, err := m.unpack(ctx, sourcev1.GitRepositoryKind, obj.Name, art)
		if err != nil {
			return nil, err
		}
		return &Fetched{Dir: dir, Revision: gitCommit(art.Revision), Artifact: art, Object: obj.Name}, nil
	}
	nr := notReady(sourcev1.GitRepositoryKind, obj, obj.Status.Conditions, waitingMessage)
	if branch := obj.Spec.Reference.Branch; branch != "" && missingRef(nr.Message, "refs/heads/"+branch) {
		obj.Spec.Reference = &sourcev1.GitRepositoryRef{Tag: branch}
		if err := m.Client.Update(ctx, obj); err != nil {
			return nil, objectError(sourcev1.GitRepositoryKind, obj.Name, err)
		}
		return nil, &NotReady{Kind: sourcev1.GitRepositoryKind, Name: obj.Name,
			Message: fmt.Sprintf("no branch %q: trying the tag %q", branch, branch)}
	}
	if tag := obj.Spec.Reference.Tag; tag != "" && ref.Branch == tag && missingRef(nr.Message, "refs/tags/"+tag) {
		if shortSHA.MatchString(tag) {
			// Argo CD takes a name that is neither as a truncated commit SHA.
			obj.Spec.Reference = &sourcev1.GitRepositoryRef{Commit: strings.ToLower(tag)}
			if err := m.Client.Update(ctx, obj); err != nil {
				return nil, objectError(sourcev1.GitRepositoryKind, obj.Name, err)
			}
			return nil, &NotReady{Kind: sourcev1.GitRepositoryKind, Name: obj.Name,
				Message: fmt.Sprintf("no branch nor tag %q: trying it as a commit SHA", tag)}
		}
		nr.Message = fmt.Sprintf("revision %q is neither a branch nor a tag of the repository", tag)
	}
	if c := obj.Spec.Reference.Commit; c != "" && ref.Branch != "" && strings.Contains(nr.Message, "unable to resolve commit object for '"+c+"'") {
		nr.Message = fmt.Sprintf("revision %q is neither a branch, a tag nor a commit of the repository", ref.Branch)
	}
	return nil, nr
}

// switchedFrom reports whether the ref cur is what Ensure switched the
// branch name to when the remote has no such branch: the tag of that
// name, or the commit it abbreviates.
func switchedFrom(cur *sourcev1.GitRepositoryRef, branch string) bool {
	return cur.Tag == branch || (shortSHA.MatchString(branch) && cur.Commit == strings.ToLower(branch))
}

// followSymlinks asks source-controller to archive symbolic links as
// what they point to and to refuse links out of the repository
// (sourcev1.SymlinksAnnotation), as Argo CD renders a checkout
// (argocd-contract §1.2, its out-of-bounds symlink check). An object that
// had not asked is also asked to fetch again now: an annotation does not
// change its generation, and its artifact was built without links.
func followSymlinks(obj *sourcev1.GitRepository) {
	a := obj.GetAnnotations()
	if a[sourcev1.SymlinksAnnotation] == sourcev1.SymlinksFollow {
		return
	}
	if a == nil {
		a = map[string]string{}
	}
	a[sourcev1.SymlinksAnnotation] = sourcev1.SymlinksFollow
	if !obj.CreationTimestamp.IsZero() {
		a[meta.ReconcileRequestAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	}
	obj.SetAnnotations(a)
}

// withURLCredentials moves credentials written in an http(s) URL into
// the repository settings (a copy), unless those have their own.
func withURLCredentials(rawURL string, argo map[string][]byte) (string, map[string][]byte) {
	clean, user, pass := splitUserinfo(rawURL)
	if clean == rawURL {
		return rawURL, argo
	}
	out := map[string][]byte{}
	for k, v := range argo {
		out[k] = v
	}
	if !hasCredentials(argo) {
		out["username"], out["password"] = []byte(user), []byte(pass)
	}
	return clean, out
}

// missingRef reports whether a GitRepository message says the remote has
// no ref name (source-controller's `couldn't find remote ref "<name>"`).
func missingRef(message, name string) bool {
	return strings.Contains(message, fmt.Sprintf("couldn't find remote ref %q", name))
}

func setLabel(obj client.Object) {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[LabelSource] = "true"
	obj.SetLabels(l)
}

// secretRef is the reference to the Secret named after an object, nil
// without data.
func secretRef(name string, data map[string][]byte) *meta.LocalObjectReference {
	if data == nil {
		return nil
	}
	return &meta.LocalObjectReference{Name: name}
}

// objectError is an API error about one source object; a create racing
// another Application's is NotReady (the next Ensure finds the object).
func objectError(kind, name string, err error) error {
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return &NotReady{Kind: kind, Name: name, Message: waitingMessage}
	}
	return fmt.Errorf("writing %s %s: %w", kind, name, err)
}
