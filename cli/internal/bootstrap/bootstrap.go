// Package bootstrap is `eddy bootstrap git|github`: it commits Eddy's
// component and sync manifests to a Git repository with go-git, installs
// the components, creates the source Secret, applies the sync objects and
// waits until the cluster has applied the pushed commit. Files, commit
// messages, Secret keys and wait conditions are flux bootstrap's
// (flux2:pkg/bootstrap, contract-2.10 §3.2), with "Eddy" for "Flux".
package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure Run.
type Options struct {
	// Remote is where the manifests are committed.
	Remote Remote
	// Namespace is the controllers' namespace and the name of the sync
	// objects (flux: both flux-system).
	Namespace string
	// Path is the cluster's directory in the repository, as CleanPath
	// returns it ("./clusters/dev").
	Path string
	// SyncURL is the GitRepository's URL (the cluster's view of the
	// repository: ssh:// with a deploy key, else the HTTP(S) URL).
	SyncURL string
	// Interval is the GitRepository's interval.
	Interval time.Duration
	// SecretName is the source Secret (--secret-name).
	SecretName string
	// Secret holds the cluster's credentials; an existing Secret is kept
	// when it is empty.
	Secret SecretOptions
	// GenerateKey makes a new deploy key (ECDSA P-384) into Secret when
	// the Secret does not exist yet, scanning KnownHostsFrom for the
	// server's key; OnKey then gets the public key (print and confirm, or
	// upload) before anything is written.
	GenerateKey    bool
	KnownHostsFrom string
	OnKey          func(ctx context.Context, publicKey []byte) error
	// Author of the commits; CommitAppendix is added to their messages
	// after an empty line.
	Author         object.Signature
	CommitAppendix string
	// Install is the bundle written to gotk-components.yaml.
	Install install.Options
	// Poll is the interval of the waits (flux: 2s); Timeout bounds them.
	Poll, Timeout time.Duration
}

// Run bootstraps: it checks the cluster, clones, commits and pushes the
// manifests (both commits or neither), installs the components when the
// cluster has none, reconciles the Secret, applies the sync objects and
// waits for them. Each error is one line for the user.
// Preflight checks the cluster as Run does first: reachable, and not
// already synced from another path than o.Path. Callers that write
// elsewhere before Run (bootstrap github creates the repository) call it
// first, so a wrong --path changes nothing.
func Preflight(ctx context.Context, c client.Client, o Options) error {
	_, err := preflight(ctx, c, o)
	return err
}

// preflight returns whether the components must be installed: no
// Kustomization <ns>/<ns> yet, or one that has applied nothing.
func preflight(ctx context.Context, c client.Client, o Options) (bool, error) {
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.Namespace}
	existing := &kustomizev1.Kustomization{}
	switch err := c.Get(ctx, key, existing); {
	case apierrors.IsNotFound(err), apimeta.IsNoMatchError(err):
		return true, nil
	case err != nil:
		return false, clusterError(err)
	}
	if normalizePath(existing.Spec.Path) != normalizePath(o.Path) {
		return false, fmt.Errorf("the cluster syncs Kustomization %s from path %q, not %q: pass --path %s, or remove that Kustomization first",
			key, existing.Spec.Path, o.Path, strings.TrimPrefix(existing.Spec.Path, "./"))
	}
	return existing.Status.LastAppliedRevision == "", nil
}

func Run(ctx context.Context, u *ui.UI, c client.Client, o Options) error {
	if o.Poll == 0 {
		o.Poll = 2 * time.Second
	}
	key := client.ObjectKey{Namespace: o.Namespace, Name: o.Namespace}

	// The cluster first: unreachable, or synced from another path, stops
	// bootstrap before anything is written.
	mustInstall, err := preflight(ctx, c, o)
	if err != nil {
		return err
	}
	secretKey := client.ObjectKey{Namespace: o.Namespace, Name: o.SecretName}
	secretExists, err := prepareSecret(ctx, c, &o, secretKey)
	if err != nil {
		return err
	}

	objects, files, syncObjs, err := render(o)
	if err != nil {
		return err
	}

	co, pushed, err := commitAndPush(ctx, u, o, files)
	if err != nil {
		return err
	}
	defer os.RemoveAll(co.Dir)
	head := co.Head()
	// unfinished says, after a push, that Git is ahead of the cluster.
	unfinished := func(what string, err error) error {
		if pushed {
			what += " (the manifests are pushed; run bootstrap again to finish)"
		}
		return fmt.Errorf("%s: %s", what, ui.OneLine(err.Error()))
	}

	if mustInstall {
		stop := u.Spin(fmt.Sprintf("installing components in %q namespace", o.Namespace))
		_, err := install.Apply(ctx, c, objects)
		stop()
		if err != nil {
			return unfinished("installing the components", err)
		}
		u.Success("installed components")
	}
	u.Success("reconciled components")

	if err := reconcileSecret(ctx, u, c, secretKey, o.Secret, secretExists); err != nil {
		return unfinished(fmt.Sprintf("applying the Secret %s", secretKey), err)
	}

	u.Action("applying sync manifests")
	if _, err := install.Apply(ctx, c, syncObjs); err != nil {
		return unfinished("applying the sync manifests", err)
	}
	if pushed {
		requestReconcile(ctx, c, key)
	}
	u.Success("reconciled sync configuration")

	revision := fmt.Sprintf("%s@sha1:%s", o.Remote.Branch, head)
	if err := waitReconciled(ctx, u, c, &sourcev1.GitRepository{}, key, revision, o); err != nil {
		return err
	}
	if err := waitReconciled(ctx, u, c, &kustomizev1.Kustomization{}, key, revision, o); err != nil {
		return err
	}
	if err := waitComponents(ctx, u, c, o, objects); err != nil {
		return err
	}
	if !pushed && !mustInstall {
		u.Success("the cluster is already bootstrapped and up to date at %s", revision)
	} else {
		u.Success("bootstrap finished: the cluster is synced to %s", revision)
	}
	return nil
}

// prepareSecret reads whether the source Secret secretKey exists and
// completes o's credentials: a generated key pair (o.GenerateKey, no
// Secret yet), the scanned host key, and the deploy key offered through
// o.OnKey.
func prepareSecret(ctx context.Context, c client.Client, o *Options, secretKey client.ObjectKey) (bool, error) {
	secretExists := true
	if err := c.Get(ctx, secretKey, &corev1.Secret{}); apierrors.IsNotFound(err) {
		secretExists = false
	} else if err != nil {
		return false, clusterError(err)
	}

	if o.GenerateKey && !secretExists && o.Secret.KeyPair == nil {
		kp, err := GenerateKeyPair()
		if err != nil {
			return false, err
		}
		o.Secret.KeyPair = kp
	}
	if o.Secret.KeyPair != nil && len(o.Secret.KnownHosts) == 0 {
		kh, err := ScanHostKey(ctx, o.KnownHostsFrom)
		if err != nil {
			return false, err
		}
		o.Secret.KnownHosts = kh
	}
	if o.Remote.KnownHosts == nil && len(o.Secret.KnownHosts) > 0 && sshHost(o.Remote.URL) == o.KnownHostsFrom {
		// Clone from the host whose key the cluster will trust.
		o.Remote.KnownHosts = o.Secret.KnownHosts
	}
	if o.Secret.KeyPair != nil && o.OnKey != nil {
		if err := o.OnKey(ctx, o.Secret.KeyPair.PublicKey); err != nil {
			return false, err
		}
	}
	return secretExists, nil
}

// render is what bootstrap writes: the components' objects, the files to
// commit (components, sync and kustomization.yaml) and the sync objects to
// apply.
func render(o Options) ([]*unstructured.Unstructured, commitFiles, []*unstructured.Unstructured, error) {
	objects, err := install.Objects(o.Install)
	if err != nil {
		return nil, commitFiles{}, nil, err
	}
	bundle, err := install.Manifest(o.Install, objects)
	if err != nil {
		return nil, commitFiles{}, nil, err
	}
	dir := path.Join(strings.TrimPrefix(o.Path, "./"), o.Namespace)
	files := commitFiles{
		components: path.Join(dir, ComponentsFile),
		sync:       path.Join(dir, SyncFile),
		kustomize:  path.Join(dir, KustomizationFile),
	}
	files.componentsYAML = string(bundle)
	syncOpts := SyncOptions{
		Name: o.Namespace, Namespace: o.Namespace, URL: o.SyncURL, Branch: o.Remote.Branch,
		Secret: o.SecretName, Interval: o.Interval, Path: o.Path,
	}
	if files.syncYAML, err = SyncManifest(syncOpts); err != nil {
		return nil, commitFiles{}, nil, err
	}
	syncObjs, err := SyncObjects(syncOpts)
	if err != nil {
		return nil, commitFiles{}, nil, err
	}
	return objects, files, syncObjs, nil
}

type commitFiles struct {
	components, sync, kustomize string
	componentsYAML, syncYAML    string
}

// commitAndPush clones, commits the components and then the sync
// manifests, and pushes both at once, cloning again when the branch moved
// meanwhile. It returns the clone and whether anything was pushed.
func commitAndPush(ctx context.Context, u *ui.UI, o Options, f commitFiles) (*Checkout, bool, error) {
	for attempt := 0; ; attempt++ {
		dir, err := os.MkdirTemp("", "eddy-bootstrap-")
		if err != nil {
			return nil, false, err
		}
		co, pushed, err := commitOnce(ctx, u, o, f, dir)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			os.RemoveAll(dir)
			u.Waiting("git conflict detected, retrying with a fresh clone")
			continue
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, false, err
		}
		return co, pushed, nil
	}
}

func commitOnce(ctx context.Context, u *ui.UI, o Options, f commitFiles, dir string) (*Checkout, bool, error) {
	stop := u.Spin(fmt.Sprintf("cloning branch %q from Git repository %q", o.Remote.Branch, RedactURL(o.Remote.URL)))
	co, err := Clone(ctx, dir, o.Remote)
	stop()
	if err != nil {
		return nil, false, err
	}
	u.Success("cloned repository")
	// A gotk file that neither eddy nor flux generated is the user's.
	for _, rel := range []string{f.components, f.sync} {
		data, err := co.ReadFile(rel)
		if err != nil {
			return nil, false, err
		}
		if data != nil && !Generated(data) {
			return nil, false, fmt.Errorf("%s in the repository was not generated by eddy or flux bootstrap: move it away, or pass another --path", rel)
		}
	}

	u.Action("generating component manifests")
	msg := func(s string) string {
		if o.CommitAppendix != "" {
			return s + "\n\n" + o.CommitAppendix
		}
		return s
	}
	c1, err := co.Commit(map[string]string{f.components: f.componentsYAML}, msg(fmt.Sprintf("Add Eddy %s component manifests", o.Install.Version)), o.Author)
	if err != nil {
		return nil, false, fmt.Errorf("committing the component manifests: %w", err)
	}
	if c1 != "" {
		u.Success("committed component manifests to %q (%q)", o.Remote.Branch, c1)
	} else {
		u.Success("component manifests are up to date")
	}

	u.Action("generating sync manifests")
	sync := map[string]string{f.sync: f.syncYAML}
	if k, err := co.ReadFile(f.kustomize); err != nil {
		return nil, false, err
	} else if k == nil {
		// kustomization.yaml lists the directory as it will be: write the
		// sync file first so the scan sees it.
		if err := writeFile(co, f.sync, f.syncYAML); err != nil {
			return nil, false, err
		}
		kyaml, err := KustomizationManifest(co.path(path.Dir(f.kustomize)))
		if err != nil {
			return nil, false, co.relErr(err)
		}
		sync[f.kustomize] = kyaml
	}
	c2, err := co.Commit(sync, msg("Add Eddy sync manifests"), o.Author)
	if err != nil {
		return nil, false, fmt.Errorf("committing the sync manifests: %w", err)
	}
	if c2 != "" {
		u.Success("committed sync manifests to %q (%q)", o.Remote.Branch, c2)
	} else {
		u.Success("sync manifests are up to date")
	}
	if c1 == "" && c2 == "" {
		return co, false, nil
	}
	stop = u.Spin(fmt.Sprintf("pushing manifests to %q", RedactURL(o.Remote.URL)))
	err = co.Push(ctx)
	stop()
	if err != nil {
		return nil, false, err
	}
	u.Success("pushed manifests to %q", o.Remote.Branch)
	return co, true, nil
}

func clusterError(err error) error {
	return fmt.Errorf("the cluster is not reachable: %s: check --kubeconfig and --context", ui.OneLine(err.Error()))
}

// normalizePath compares Kustomization paths as flux does: "./" prefix,
// no trailing slash.
func normalizePath(p string) string {
	if len(p) > 2 {
		p = strings.TrimSuffix(p, "/")
	}
	return "./" + strings.TrimPrefix(p, "./")
}

// reconcileSecret creates the Secret, or updates its keys with the given
// credentials; with no credentials an existing Secret is kept (flux).
func reconcileSecret(ctx context.Context, u *ui.UI, c client.Client, key client.ObjectKey, o SecretOptions, exists bool) error {
	u.Action("determining if source secret %q exists", key.String())
	if exists && o.Empty() {
		u.Success("source secret up to date")
		return nil
	}
	u.Action("applying source secret %q", key.String())
	data := SecretData(o)
	s := &corev1.Secret{}
	err := c.Get(ctx, key, s)
	switch {
	case apierrors.IsNotFound(err):
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, StringData: data}
		err = c.Create(ctx, s)
	case err == nil:
		s.StringData = data
		err = c.Update(ctx, s)
	}
	if err != nil {
		return err
	}
	u.Success("reconciled source secret")
	return nil
}

// requestReconcile asks the GitRepository and Kustomization to reconcile
// now, so a pushed commit is picked up without waiting for the interval.
func requestReconcile(ctx context.Context, c client.Client, key client.ObjectKey) {
	now := time.Now().Format(time.RFC3339Nano)
	for _, obj := range []client.Object{&sourcev1.GitRepository{}, &kustomizev1.Kustomization{}} {
		obj.SetNamespace(key.Namespace)
		obj.SetName(key.Name)
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, now)
		_ = c.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", patch))
	}
}

// waitReconciled polls obj until it is Ready at its generation with
// revision as its row's Attempted reads it (GitRepository:
// status.artifact.revision, Kustomization: status.lastAttemptedRevision),
// as flux's objectReconciled: Ready=False and suspension end the wait with
// an error.
func waitReconciled(ctx context.Context, u *ui.UI, c client.Client, obj kinds.Object, key client.ObjectKey, revision string, o Options) error {
	k, _ := kinds.Of(obj)
	kind := k.Kind
	stop := u.Spin(fmt.Sprintf("waiting for %s %q to be reconciled", kind, key.String()))
	var last string
	err := wait.PollUntilContextTimeout(ctx, o.Poll, o.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, clusterError(err)
		}
		if obj.IsSuspended() {
			return false, fmt.Errorf("%s %s is suspended: resume it with `eddy resume %s %s`", kind, key, k.Human, key.Name)
		}
		rev, gen := "", obj.GetObservedGeneration()
		if k.Attempted != nil {
			rev = k.Attempted(obj)
		}
		cond := apimeta.FindStatusCondition(obj.GetConditions(), meta.ReadyCondition)
		if cond != nil {
			// Kept before the generation check: a failing generation
			// leaves status.observedGeneration behind, and the timeout
			// error should still say why (flux reports it too).
			last = cond.Message
		}
		if gen != obj.GetGeneration() || cond == nil {
			return false, nil
		}
		switch cond.Status {
		case metav1.ConditionFalse:
			return false, fmt.Errorf("%s %s is not ready: %s", kind, key, ui.OneLine(cond.Message))
		case metav1.ConditionTrue:
			return legacyRevision(rev) == revision, nil
		}
		return false, nil
	})
	stop()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err) {
			err = fmt.Errorf("%s %s did not reach revision %s within --timeout %s (last: %s)", kind, key, revision, o.Timeout, ui.OneLine(last))
		}
		return err
	}
	u.Success("%s reconciled successfully", kind)
	return nil
}

// legacyRevision turns flux's old "<branch>/<sha>" form into
// "<branch>@sha1:<sha>".
func legacyRevision(rev string) string {
	if strings.Contains(rev, "@") || !strings.Contains(rev, "/") {
		return rev
	}
	i := strings.LastIndex(rev, "/")
	return rev[:i] + "@sha1:" + rev[i+1:]
}

// waitComponents waits until the bundle's Deployments are Current
// (kstatus), as flux's ReportComponentsHealth.
func waitComponents(ctx context.Context, u *ui.UI, c client.Client, o Options, objects []*unstructured.Unstructured) error {
	u.Action("confirming components are healthy")
	stop := u.Spin("waiting for the components' Deployments")
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	err := install.WaitDeployments(ctx, c, objects, o.Poll, func(string) {})
	stop()
	if err != nil {
		return fmt.Errorf("components not healthy within --timeout %s: %s", o.Timeout, ui.OneLine(err.Error()))
	}
	u.Success("all components are healthy")
	return nil
}

// sshHost is the host[:port] of an ssh:// URL, "" for other URLs.
func sshHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "ssh" {
		return ""
	}
	return u.Host
}
