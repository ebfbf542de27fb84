package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BenchmarkWebhookToAppliedSideBySide: Eddy's stack and Flux's each
// reconcile a GitRepository, a Kustomization of one ConfigMap and a GitHub
// Receiver; K commits (EDDY_WEBHOOK_BENCH_PUSHES, default 10) are pushed to
// each, alternately (the order swapped every round), each followed by its
// signed push webhook. Watches started before the push time, from the
// webhook POST:
//   - <stack>-answer-ms: the receiver's answer;
//   - <stack>-artifact-ms: the GitRepository's artifact at the new revision;
//   - <stack>-object-ms: the ConfigMap at the new version;
//   - <stack>-applied-ms: the Kustomization's lastAppliedRevision (the figure
//     compared: ratio-eddy/flux-webhook, of the medians);
//   - the requests the Git server answered a push (logged).
//
// EDDY_WEBHOOK_BENCH_BASE_BIN=dir adds a third stack, eddy-base: Eddy's
// controllers built into dir (e.g. from main), measured the same way and
// in the same rounds, for a before/after under the same load
// (ratio-eddy/eddy-base-webhook).
//
// Each figure is the median of the K pushes. With EDDY_WEBHOOK_BENCH_LOGS
// naming a directory, the controllers' logs (debug level) are copied there,
// to trace a push through them. Flux's stack needs
// bin/flux-{notification,kustomize,source}-controller (make bench builds
// them); without Flux's source-controller Eddy's runs in its place.
func BenchmarkWebhookToAppliedSideBySide(b *testing.B) {
	k := envInt(b, "EDDY_WEBHOOK_BENCH_PUSHES", 10)
	pipes := []*pipeline{newPipeline(b, eddyStack(b, "eddy", ""), testenv.NewNamespace(b, env.Client, "wh-eddy-"))}
	if dir := os.Getenv("EDDY_WEBHOOK_BENCH_BASE_BIN"); dir != "" {
		pipes = append(pipes, newPipeline(b, eddyStack(b, "eddy-base", dir), testenv.NewNamespace(b, env.Client, "wh-eddy-base-")))
	}
	fluxNS := testenv.NewNamespace(b, env.Client, "wh-flux-")
	if s := fluxStack(b, fluxNS); s != nil {
		pipes = append(pipes, newPipeline(b, s, fluxNS))
	}
	for range b.N {
		samples := map[string][]sample{}
		for round := range k {
			order := slices.Clone(pipes)
			if round%2 == 1 {
				slices.Reverse(order)
			}
			for _, p := range order {
				samples[p.stack.name] = append(samples[p.stack.name], p.push(b))
			}
		}
		medians := map[string]time.Duration{}
		for _, p := range pipes {
			m := summarize(samples[p.stack.name])
			medians[p.stack.name] = m.applied
			b.Logf("%s: median of %d pushes: answer %s, artifact %s, object %s, applied %s; %d Git requests a push %s", p.stack.name, k,
				ms(m.answer), ms(m.artifact), ms(m.object), ms(m.applied), m.gitRequests, p.stack.sourceNote)
			for name, d := range map[string]time.Duration{"answer": m.answer, "artifact": m.artifact, "object": m.object, "applied": m.applied} {
				b.ReportMetric(float64(d.Microseconds())/1000, p.stack.name+"-"+name+"-ms")
			}
		}
		for _, p := range pipes {
			p.stack.saveLogs(b)
		}
		if base, ok := medians["eddy-base"]; ok {
			b.ReportMetric(medians["eddy"].Seconds()/base.Seconds(), "ratio-eddy/eddy-base-webhook")
		}
		if f, ok := medians["flux"]; ok {
			b.ReportMetric(medians["eddy"].Seconds()/f.Seconds(), "ratio-eddy/flux-webhook")
		}
	}
}

func ms(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }

// sample is one push's times from the webhook POST.
type sample struct {
	answer, artifact, object, applied time.Duration
	gitRequests                       int
}

// summarize is the median of each figure.
func summarize(ss []sample) sample {
	med := func(f func(sample) time.Duration) time.Duration {
		var ds []time.Duration
		for _, s := range ss {
			ds = append(ds, f(s))
		}
		slices.Sort(ds)
		n := len(ds)
		return (ds[(n-1)/2] + ds[n/2]) / 2
	}
	return sample{
		answer:   med(func(s sample) time.Duration { return s.answer }),
		artifact: med(func(s sample) time.Duration { return s.artifact }),
		object:   med(func(s sample) time.Duration { return s.object }),
		applied:  med(func(s sample) time.Duration { return s.applied }),
		// The Git server's requests per push, the same at every push.
		gitRequests: ss[len(ss)-1].gitRequests,
	}
}

// pipeline is one stack's repository, GitRepository, Kustomization and
// Receiver, in a namespace of its own.
type pipeline struct {
	stack   *stack
	ns      string
	token   string
	path    string
	repo    *testenv.Repo
	version int
	watcher client.WithWatch
}

func cmData(ns string, v int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: %s}\ndata: {version: \"%d\"}\n", ns, v)
}

// newPipeline creates the objects on s's shard in ns, waits for the first apply
// and for the Receiver's path, and pushes once unmeasured (the receiver
// server may not see the Receiver at once, and the first fetch and apply
// warm connections and caches).
func newPipeline(b *testing.B, s *stack, ns string) *pipeline {
	p := &pipeline{stack: s, ns: ns, token: "bench-" + ns}
	p.repo = gitSrv.NewRepo(b, map[string]string{"apps/cm.yaml": cmData(ns, 0)})
	w, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	p.watcher = w
	labels := map[string]string{shardKey: s.name}
	om := func(name string) apimeta.ObjectMeta {
		return apimeta.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
	}
	repo := &sourcev1.GitRepository{ObjectMeta: om("platform"), Spec: sourcev1.GitRepositorySpec{
		URL: p.repo.URL(), Interval: apimeta.Duration{Duration: time.Hour}, Reference: &sourcev1.GitRepositoryRef{Branch: "main"}}}
	ks := &kustomizev1.Kustomization{ObjectMeta: om("apps"), Spec: kustomizev1.KustomizationSpec{
		Interval: apimeta.Duration{Duration: time.Hour}, Path: "./apps", Prune: true,
		SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "platform"}}}
	rcv := &notificationv1.Receiver{ObjectMeta: om("github"), Spec: notificationv1.ReceiverSpec{
		Type: notificationv1.GitHubReceiver, Events: []string{"push"}, SecretRef: &meta.LocalObjectReference{Name: "webhook-token"},
		Resources: []notificationv1.ReceiverResource{{CrossNamespaceObjectReference: notificationv1.CrossNamespaceObjectReference{
			Kind: sourcev1.GitRepositoryKind, Name: "platform"}}}}}
	sec := &corev1.Secret{ObjectMeta: om("webhook-token"), StringData: map[string]string{"token": p.token}}
	for _, o := range []client.Object{sec, repo, ks, rcv} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
	// Deleted while the controllers run (cleanups run last-in first-out),
	// so that the Kustomization's finalizer is handled.
	b.Cleanup(func() {
		for _, o := range []client.Object{ks, rcv, repo} {
			_ = env.Client.Delete(context.Background(), o)
			testenv.WaitGone(b, env.Client, o, s.name+" cleanup")
		}
	})
	head := p.repo.MustGit(b, "rev-parse", "HEAD")
	testenv.WaitFor(b, env.Client, ks, s.name+": first revision applied", func() bool {
		return ks.Status.LastAppliedRevision == "main@sha1:"+head
	})
	testenv.WaitFor(b, env.Client, rcv, s.name+": receiver path", func() bool { return rcv.Status.WebhookPath != "" })
	p.path = rcv.Status.WebhookPath
	p.push(b)
	return p
}

// push commits the next version, sends the signed push webhook and times
// the steps from the POST (sample).
func (p *pipeline) push(b *testing.B) sample {
	p.version++
	v := p.version
	before := p.repo.MustGit(b, "rev-parse", "HEAD")
	after := p.repo.MustCommit(b, map[string]string{"apps/cm.yaml": cmData(p.ns, v)}, fmt.Sprintf("version %d", v))
	rev := "main@sha1:" + after
	body, err := webhook.GitHubPush("refs/heads/main", before, after, "acme/platform", p.repo.URL(),
		webhook.Commit{ID: after, Message: fmt.Sprintf("version %d", v), Timestamp: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	artifact := p.watch(b, ctx, &sourcev1.GitRepositoryList{}, func(o client.Object) bool {
		a := o.(*sourcev1.GitRepository).Status.Artifact
		return a != nil && a.Revision == rev
	})
	object := p.watch(b, ctx, &corev1.ConfigMapList{}, func(o client.Object) bool {
		return o.GetName() == "cm" && o.(*corev1.ConfigMap).Data["version"] == fmt.Sprint(v)
	})
	applied := p.watch(b, ctx, &kustomizev1.KustomizationList{}, func(o client.Object) bool {
		return o.(*kustomizev1.Kustomization).Status.LastAppliedRevision == rev
	})
	gitBefore := p.gitRequests()
	start := time.Now()
	p.post(b, body)
	var s sample
	s.answer = time.Since(start)
	for _, w := range []struct {
		ch  <-chan time.Time
		out *time.Duration
	}{{artifact, &s.artifact}, {object, &s.object}, {applied, &s.applied}} {
		select {
		case t := <-w.ch:
			*w.out = t.Sub(start)
		case <-ctx.Done():
			b.Fatalf("%s: revision %s not applied 60s after the webhook; logs: %v", p.stack.name, rev, p.stack.logs)
		}
	}
	s.gitRequests = p.gitRequests() - gitBefore
	return s
}

// gitRequests counts the requests the Git server answered for the
// pipeline's repository.
func (p *pipeline) gitRequests() int {
	n := 0
	for _, r := range gitSrv.Requests() {
		if strings.HasPrefix(r.Path, "/"+p.repo.Name+"/") {
			n++
		}
	}
	return n
}

// post sends the signed webhook; until the receiver server knows the
// Receiver it answers 404, and the POST is repeated.
func (p *pipeline) post(b *testing.B, body []byte) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodPost, p.stack.receiverURL+p.path, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", webhook.GitHubSignature(body, p.token))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		if resp.StatusCode != http.StatusNotFound || time.Now().After(deadline) {
			b.Fatalf("%s: webhook answered %d", p.stack.name, resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watch starts a watch of list in the pipeline's namespace and returns a
// channel that receives the time the first object meeting cond was seen.
func (p *pipeline) watch(b *testing.B, ctx context.Context, list client.ObjectList, cond func(client.Object) bool) <-chan time.Time {
	w, err := p.watcher.Watch(ctx, list, client.InNamespace(p.ns))
	if err != nil {
		b.Fatal(err)
	}
	ch := make(chan time.Time, 1)
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(client.Object); ok && cond(o) {
				ch <- time.Now()
				return
			}
		}
	}()
	return ch
}
