package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type noopResult struct {
	time               time.Duration
	cpu                time.Duration // helm-controller's
	newReleaseVersions int           // Helm storage Secrets that did not exist before
	storageWrites      int           // creates, updates and deletes of Helm storage Secrets
	hrExtraWrites      int           // HelmRelease writes beyond the request and the status patch
	chartWrites        int
	repoWrites         int
	requests           float64 // helm-controller's API requests, trailing window included
}

// noChangeReconcile requests a reconcile of the n HelmReleases in ns and
// counts, through watches opened before the request, the writes until each
// reports it handled, plus the trailing window.
func noChangeReconcile(b *testing.B, ns string, n int) noopResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	helmOwned := client.MatchingLabels{"owner": "helm"}
	secretsBefore := &corev1.SecretList{}
	if err := wc.List(ctx, secretsBefore, client.InNamespace(ns), helmOwned); err != nil {
		b.Fatal(err)
	}
	// Each watch starts at the resourceVersion of a list taken now, so no
	// write after this point is missed.
	open := func(list client.ObjectList, opts ...client.ListOption) watch.Interface {
		if err := wc.List(ctx, list, append(opts, client.InNamespace(ns))...); err != nil {
			b.Fatal(err)
		}
		rv := list.(metav1.ListInterface).GetResourceVersion()
		w, err := wc.Watch(ctx, list, append(opts, client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
		if err != nil {
			b.Fatal(err)
		}
		return w
	}
	hrW := open(&helmv2.HelmReleaseList{})
	defer hrW.Stop()
	chartW := open(&sourcev1.HelmChartList{})
	defer chartW.Stop()
	repoW := open(&sourcev1.HelmRepositoryList{})
	defer repoW.Stop()
	secretW := open(&corev1.SecretList{}, helmOwned)
	defer secretW.Stop()

	var res noopResult
	token := time.Now().Format(time.RFC3339Nano)
	patch := client.RawPatch(types.MergePatchType,
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token))
	start := time.Now()
	for i := range n {
		hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("podinfo-%d", i), Namespace: ns}}
		if err := env.Client.Patch(ctx, hr, patch); err != nil {
			b.Fatal(err)
		}
	}

	hrWrites := map[string]int{}
	handled := map[string]bool{}
	var trailingEnd <-chan time.Time // nil (never ready) until all are handled
	timeout := time.After(readyTimeout)
	for done := false; !done; {
		select {
		case ev, ok := <-hrW.ResultChan():
			hr, isHR := ev.Object.(*helmv2.HelmRelease)
			if !ok || !isHR {
				b.Fatalf("HelmRelease watch ended: %v", watchErr(ev))
			}
			hrWrites[hr.Name]++
			if hr.Status.LastHandledReconcileAt == token && !handled[hr.Name] {
				handled[hr.Name] = true
				if len(handled) == n {
					res.time = time.Since(start)
					trailingEnd = time.After(trailing)
				}
			}
		case ev, ok := <-chartW.ResultChan():
			if !ok || ev.Type == watch.Error {
				b.Fatalf("HelmChart watch ended: %v", watchErr(ev))
			}
			res.chartWrites++
		case ev, ok := <-repoW.ResultChan():
			if !ok || ev.Type == watch.Error {
				b.Fatalf("HelmRepository watch ended: %v", watchErr(ev))
			}
			res.repoWrites++
		case ev, ok := <-secretW.ResultChan():
			if !ok || ev.Type == watch.Error {
				b.Fatalf("Secret watch ended: %v", watchErr(ev))
			}
			res.storageWrites++
		case <-trailingEnd:
			done = true
		case <-timeout:
			b.Fatalf("%d of %d HelmReleases handled reconcile request %s after %s", len(handled), n, token, readyTimeout)
		}
	}
	// Two writes per HelmRelease are expected: the request annotation and
	// the status patch recording lastHandledReconcileAt.
	for _, w := range hrWrites {
		res.hrExtraWrites += max(0, w-2)
	}

	secretsAfter := &corev1.SecretList{}
	if err := wc.List(ctx, secretsAfter, client.InNamespace(ns), helmOwned); err != nil {
		b.Fatal(err)
	}
	before := map[string]bool{}
	for _, s := range secretsBefore.Items {
		before[s.Name] = true
	}
	for _, s := range secretsAfter.Items {
		if !before[s.Name] {
			res.newReleaseVersions++
		}
	}
	return res
}

func watchErr(ev watch.Event) error {
	if ev.Type == watch.Error {
		if s, ok := ev.Object.(*metav1.Status); ok {
			return errors.New(s.Message)
		}
		return fmt.Errorf("error event %v", ev.Object)
	}
	return errors.New("channel closed")
}
