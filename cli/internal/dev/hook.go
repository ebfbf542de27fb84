package dev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HookReceiver is the GitHub Receiver eddy dev creates in flux-system for
// the synced GitRepository (secretRef WebhookSecret), so the post-commit
// hook works for any repository, whether or not it defines a Receiver.
const HookReceiver = "eddy-dev"

// ApplyHookReceiver creates or updates the Receiver HookReceiver: type
// github, event push, secretRef WebhookSecret, resource GitRepository
// flux-system/flux-system.
func ApplyHookReceiver(ctx context.Context, c client.Client) error {
	r := &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Name: HookReceiver, Namespace: Namespace}}
	if err := createOrUpdate(ctx, c, r, func() {
		if r.Labels == nil {
			r.Labels = map[string]string{}
		}
		r.Labels["app.kubernetes.io/managed-by"] = "eddy-dev"
		r.Spec.Type = notificationv1.GitHubReceiver
		r.Spec.Events = []string{"push"}
		r.Spec.SecretRef = &meta.LocalObjectReference{Name: WebhookSecret}
		r.Spec.Resources = []notificationv1.ReceiverResource{{CrossNamespaceObjectReference: notificationv1.CrossNamespaceObjectReference{
			APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind, Name: SyncName}}}
	}); err != nil {
		return fmt.Errorf("Receiver %s/%s: %w", Namespace, HookReceiver, err)
	}
	return nil
}

// hookMarker is the line that marks a post-commit hook as Eddy's: only such
// a hook is ever replaced.
const hookMarker = "# eddy dev post-commit hook"

// HookPath returns the post-commit hook of the Git work tree dir, honouring
// core.hooksPath and linked work trees.
func HookPath(dir string) (string, error) {
	hooks, err := gitserver.Git(dir, "rev-parse", "--git-path", "hooks")
	if err != nil {
		return "", fmt.Errorf("%s is not a Git work tree", dir)
	}
	if !filepath.IsAbs(hooks) {
		hooks = filepath.Join(dir, hooks)
	}
	return filepath.Join(hooks, "post-commit"), nil
}

// IsEddyHook reports whether the hook file at path was written by InstallHook.
func IsEddyHook(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && bytes.Contains(data, []byte(hookMarker))
}

// CheckHook returns an error when the post-commit hook of dir exists and is
// not Eddy's: InstallHook would refuse it.
func CheckHook(dir string) (string, error) {
	path, err := HookPath(dir)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", err
	}
	if !bytes.Contains(data, []byte(hookMarker)) {
		return "", fmt.Errorf("%s exists and is not Eddy's: remove it, or add the line `eddy dev hook post-commit` to it yourself", path)
	}
	return path, nil
}

// InstallHook writes the post-commit hook of the work tree dir: a small
// script that runs `<eddy> dev hook post-commit --state-dir <stateDir>`
// and always exits 0, so it never fails or holds up a commit. It holds no
// secret: the command reads the token from the state directory. A hook
// that is not Eddy's is left alone (error). It returns the hook's path.
func InstallHook(dir, eddy, stateDir string) (string, error) {
	path, err := CheckHook(dir)
	if err != nil {
		return "", err
	}
	script := fmt.Sprintf(`#!/bin/sh
%s (installed by eddy dev up --install-hook).
# Tells the local eddy dev environment about each commit, through its GitHub
# Receiver, so the commit is applied at once. It never fails a commit; it
# holds no secret. Remove this file to stop.
eddy=%s
if [ -x "$eddy" ]; then
	"$eddy" dev hook post-commit --state-dir %s || true
else
	echo "eddy dev: $eddy not found: commit not sent (remove $0 to silence this)"
fi
exit 0
`, hookMarker, shellQuote(eddy), shellQuote(stateDir))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp := path + ".eddy-tmp"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return path, nil
}

// PostCommit tells the environment of stateDir about the commit at HEAD of
// the work tree dir: it POSTs a signed GitHub `push` payload to the
// Receiver HookReceiver. It prints one
// line saying what it did or why it did not, and returns no error: a hook
// must not fail a commit. It gives up after PostCommitTimeout, so a hung
// environment delays a commit by no more than that.
func PostCommit(ctx context.Context, stateDir, dir string, out io.Writer) {
	ctx, cancel := context.WithTimeout(ctx, PostCommitTimeout)
	defer cancel()
	type result struct {
		msg string
		err error
	}
	done := make(chan result, 1)
	go func() {
		msg, err := postCommit(ctx, stateDir, dir)
		done <- result{msg, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// Some client calls (discovery) do not all honour ctx: do not wait for them.
		r.err = fmt.Errorf("the environment did not answer within %s", PostCommitTimeout)
	}
	if r.err != nil {
		r.msg = r.err.Error() + ": commit not sent"
	}
	fmt.Fprintln(out, "eddy dev: "+r.msg)
}

// PostCommitTimeout bounds what the post-commit hook adds to a commit.
const PostCommitTimeout = 2 * time.Second

func postCommit(ctx context.Context, stateDir, dir string) (string, error) {
	s := Running(stateDir)
	if s == nil || s.Phase != PhaseRunning || s.ReceiverURL == "" {
		return "", fmt.Errorf("no environment running (state %s)", stateDir)
	}
	top, err := gitserver.Git(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%s is not a Git work tree", dir)
	}
	if !sameDir(top, s.WorkTree) {
		return "", fmt.Errorf("the environment syncs another repository (%s)", s.WorkTree)
	}
	branch, err := gitserver.Git(top, "symbolic-ref", "--short", "HEAD")
	if err != nil {
		return "", errors.New("detached HEAD")
	}
	after, err := gitserver.Git(top, "rev-parse", "HEAD")
	if err != nil {
		return "", errors.New("no commit at HEAD")
	}
	before, err := gitserver.Git(top, "rev-parse", "-q", "--verify", "HEAD~1")
	if err != nil {
		before = strings.Repeat("0", len(after))
	}
	subject, _ := gitserver.Git(top, "log", "-1", "--format=%B")
	when := time.Now()
	if ts, err := gitserver.Git(top, "log", "-1", "--format=%cI"); err == nil {
		if t, err := time.Parse(time.RFC3339, ts); err == nil {
			when = t
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		return "", errors.New("cannot read the environment's kubeconfig")
	}
	cfg.Timeout = time.Second
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return "", fmt.Errorf("cannot reach the cluster: %v", err)
	}
	repo := &sourcev1.GitRepository{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: SyncName}, repo); err != nil {
		return "", fmt.Errorf("GitRepository %s/%s: %v", Namespace, SyncName, err)
	}
	if ref := repo.Spec.Reference; ref != nil && ref.Branch != "" && ref.Branch != branch {
		return "", fmt.Errorf("branch %s is not the synced branch %s", branch, ref.Branch)
	}
	r, tok, err := hookReceiver(ctx, c)
	if err != nil {
		return "", err
	}
	body, err := webhook.GitHubPush("refs/heads/"+branch, before, after, "eddy-dev/"+filepath.Base(top), repo.Spec.URL,
		webhook.Commit{ID: after, Message: subject, Timestamp: when})
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: time.Second}
	url := strings.TrimRight(s.ReceiverURL, "/") + r.Status.WebhookPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("eddy-dev-%d", time.Now().UnixNano()))
	req.Header.Set("X-Hub-Signature-256", webhook.GitHubSignature(body, tok))
	req.Header.Set("User-Agent", "eddy-dev-hook")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("Receiver %s/%s: notification-controller unreachable", r.Namespace, r.Name)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return "", fmt.Errorf("Receiver %s/%s: %s: notification-controller serves no Receiver at its status.webhookPath yet "+
			"(its token Secret just changed?): commit again in a moment, or see `eddy dev status`", r.Namespace, r.Name, resp.Status)
	}
	return fmt.Sprintf("push of %s %.7s sent to Receiver %s/%s: %s", branch, after, r.Namespace, r.Name, resp.Status), nil
}

// hookReceiver returns the Receiver HookReceiver and the token of the
// Secret it names, as notification-controller uses them: the request goes
// to its status.webhookPath, signed with that token, so the hook works
// whatever changed the Secret. An error says what is wrong and how to
// repair it; it never holds the token.
func hookReceiver(ctx context.Context, c client.Client) (*notificationv1.Receiver, string, error) {
	r := &notificationv1.Receiver{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: HookReceiver}, r); err != nil {
		return nil, "", fmt.Errorf("Receiver %s/%s: %v (run `eddy dev up` to restore it)", Namespace, HookReceiver, err)
	}
	if r.Status.WebhookPath == "" {
		why := "not reconciled yet"
		if c := apimeta.FindStatusCondition(r.Status.Conditions, meta.ReadyCondition); c != nil && c.Status != metav1.ConditionTrue {
			why = c.Message
		}
		return nil, "", fmt.Errorf("Receiver %s/%s has no webhook path: %s (run `eddy dev up` to restore it)", r.Namespace, r.Name, why)
	}
	if r.Spec.SecretRef == nil {
		return nil, "", fmt.Errorf("Receiver %s/%s names no Secret (run `eddy dev up` to restore it)", r.Namespace, r.Name)
	}
	sec := &corev1.Secret{}
	key := client.ObjectKey{Namespace: r.Namespace, Name: r.Spec.SecretRef.Name}
	if err := c.Get(ctx, key, sec); err != nil {
		return nil, "", fmt.Errorf("Secret %s of Receiver %s/%s: %v (run `eddy dev up` to restore it)", key, r.Namespace, r.Name, err)
	}
	tok := string(sec.Data["token"]) // as notification-controller reads it: not trimmed
	if tok == "" {
		return nil, "", fmt.Errorf("Secret %s of Receiver %s/%s has no key token (run `eddy dev up` to restore it)", key, r.Namespace, r.Name)
	}
	return r, tok, nil
}
