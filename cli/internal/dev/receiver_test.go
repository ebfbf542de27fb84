package dev

import (
	"bytes"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Pointing the sync at a repository also creates the GitHub Receiver the
// post-commit hook sends to, for the synced GitRepository, so the hook works
// for a repository that defines no Receiver of its own.
func TestApplySourceCreatesTheHookReceiver(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	src := &Source{URL: "http://127.0.0.1:1/repo", Branch: "main", Path: "./"}
	for range 2 { // idempotent
		if err := ApplySource(t.Context(), c, src); err != nil {
			t.Fatal(err)
		}
	}
	r := &notificationv1.Receiver{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: Namespace, Name: HookReceiver}, r); err != nil {
		t.Fatalf("Receiver %s/%s: %v", Namespace, HookReceiver, err)
	}
	res := r.Spec.Resources
	if r.Spec.Type != notificationv1.GitHubReceiver || r.Spec.SecretRef == nil || r.Spec.SecretRef.Name != WebhookSecret ||
		len(res) != 1 || res[0].Kind != sourcev1.GitRepositoryKind || res[0].Name != SyncName ||
		len(r.Spec.Events) != 1 || r.Spec.Events[0] != "push" {
		t.Errorf("Receiver spec %+v; want github, push, secretRef %s, GitRepository %s", r.Spec, WebhookSecret, SyncName)
	}
}

// With an environment whose API server and receiver accept connections and
// never answer, the hook still ends with one line and the commit is not sent.
func TestPostCommitHungEnvironment(t *testing.T) {
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 100)
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- c: // held open, never answered
			default:
				c.Close()
			}
		}
	}()
	defer func() { // the accept loop ends before conns is closed
		hung.Close()
		<-accepted
		close(conns)
		for c := range conns {
			c.Close()
		}
	}()
	url := "http://" + hung.Addr().String()
	state := t.TempDir()
	kubeconfig := filepath.Join(state, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: url}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "x"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	// An owner process that looks like `eddy dev` to IsOwner.
	owner := exec.Command("sh", "-c", "sleep 60", "sh", "dev", "supervise")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill(); _ = owner.Wait() }()
	repo := gitRepo(t)
	if _, err := WebhookToken(state); err != nil {
		t.Fatal(err)
	}
	if err := writeState(state, &State{PID: owner.Process.Pid, Phase: PhaseRunning, Kubeconfig: kubeconfig,
		ReceiverURL: url, WorkTree: repo}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	PostCommit(t.Context(), state, repo, &out)
	s := out.String()
	token, _ := os.ReadFile(tokenFile(state))
	if strings.Count(s, "\n") != 1 || !strings.Contains(s, "commit not sent") || strings.Contains(s, strings.TrimSpace(string(token))) {
		t.Errorf("output %q; want one line saying the commit was not sent, without the token", s)
	}
	t.Logf("hook output: %s", strings.TrimSpace(s))
}

// The hook sends to the path notification-controller serves, signed with
// the token of the Secret the Receiver names, whatever changed that
// Secret; a Receiver without a path gets a one-line explanation with its
// Ready message and the repair, never the token.
func TestHookReceiverFollowsTheClusterOrExplains(t *testing.T) {
	ready := &notificationv1.Receiver{ObjectMeta: metav1.ObjectMeta{Name: HookReceiver, Namespace: Namespace},
		Spec:   notificationv1.ReceiverSpec{Type: notificationv1.GitHubReceiver, SecretRef: &meta.LocalObjectReference{Name: WebhookSecret}},
		Status: notificationv1.ReceiverStatus{WebhookPath: "/hook/abc"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: WebhookSecret, Namespace: Namespace}, Data: map[string][]byte{"token": []byte("changed\n")}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(ready, sec).Build()
	r, tok, err := hookReceiver(t.Context(), c)
	if err != nil || r.Status.WebhookPath != "/hook/abc" || tok != "changed\n" {
		t.Errorf("hookReceiver: %v, %q, %v; want the status path and the Secret's token as it is", r, tok, err)
	}

	notReady := ready.DeepCopy()
	notReady.Status = notificationv1.ReceiverStatus{Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: notificationv1.TokenNotFoundReason, Message: "unable to read token from secret 'flux-system/eddy-dev-webhook-token'"}}}
	c = fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(notReady).Build()
	_, _, err = hookReceiver(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "unable to read token") || !strings.Contains(err.Error(), "run `eddy dev up` to restore it") {
		t.Errorf("hookReceiver of a Receiver without a path: %v; want its Ready message and the repair", err)
	}
}
