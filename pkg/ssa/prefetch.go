package ssa

import (
	"context"
	"crypto/sha256"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// prefetched is what an applyRun learnt of an object before its plan: its
// memo key and digest (read computes them once), and its live object when
// a LIST returned it. An object a LIST did not return is read on its own
// (its owner labels may have been changed in the cluster).
type prefetched struct {
	digested bool
	memoKey  string
	digest   [sha256.Size]byte
	memoOK   bool
	live     *unstructured.Unstructured
}

// listed is the live object a LIST returned; nil: read it.
func (pre *prefetched) listed() *unstructured.Unstructured {
	if pre == nil {
		return nil
	}
	return pre.live
}

// listGroup is the objects of one LIST: one kind in one namespace,
// selected by the values of Manager.ListLabels on the desired objects.
type listGroup struct {
	gvk       schema.GroupVersionKind
	namespace string
	labels    client.MatchingLabels
	objs      []int
	key       string // in UnchangedMemo.refused
}

// readsFirst tells whether plan reads u's live object before any dry-run:
// an object the memo knows with this desired state (a periodic reconcile
// of an unchanged one), or one whose plan depends on the live object. It
// prepares u as plan does (scope, Secret data) and returns its digest.
func (m *Manager) readsFirst(u *unstructured.Unstructured, opts ApplyOptions) (*prefetched, bool) {
	if flag(u, ReconcileAnnotation) == "disabled" || flag(u, SSAAnnotation) == "ignore" || m.scopeNamespace(u) != nil {
		return nil, false
	}
	if len(ignoredPaths(opts.Ignore, u)) > 0 || flag(u, SSAAnnotation) == "ifnotpresent" {
		return &prefetched{}, true
	}
	normalizeSecret(u)
	p := &planned{}
	m.digest(p, u, nil)
	pre := &prefetched{digested: true, memoKey: p.memoKey, digest: p.digest, memoOK: p.memoOK}
	return pre, p.memoOK && m.Memo.known(p.memoKey, p.digest)
}

// prefetch reads with one LIST per kind and namespace the live objects of
// the selected ones that plan would read first, where two or more share
// the kind, the namespace and the values of m.ListLabels: an unchanged
// reconcile then costs a request per kind and namespace, not per object.
// A LIST that fails (the identity may not list) leaves its objects to be
// read one by one.
func (run *applyRun) prefetch(ctx context.Context, selected func(i int, u *unstructured.Unstructured) bool) {
	m := run.m
	if len(m.ListLabels) == 0 || m.Memo == nil {
		return
	}
	groups := map[string]*listGroup{}
	for i, u := range run.objs {
		if !selected(i, u) {
			continue
		}
		pre, first := m.readsFirst(u, run.opts)
		run.pre[i] = pre
		if !first || u.GetNamespace() == "" {
			continue
		}
		g := &listGroup{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), labels: client.MatchingLabels{}}
		key := g.gvk.String() + "\x00" + g.namespace
		for _, k := range m.ListLabels {
			v := u.GetLabels()[k]
			if v == "" {
				g = nil
				break
			}
			g.labels[k] = v
			key += "\x00" + v
		}
		if g == nil || m.Memo.listRefused(m.MemoScope+"\x00"+key) {
			continue
		}
		g.key = m.MemoScope + "\x00" + key
		if groups[key] == nil {
			groups[key] = g
		}
		groups[key].objs = append(groups[key].objs, i)
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		if len(g.objs) < 2 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			live := map[string]*unstructured.Unstructured{}
			for _, item := range m.list(ctx, g) {
				live[item.GetName()] = item
			}
			for _, i := range g.objs {
				if l := live[run.objs[i].GetName()]; l != nil && run.pre[i] != nil {
					run.pre[i].live = l
				}
			}
		}()
	}
	wg.Wait()
}

// list returns the live objects of g; none when the LIST fails. A LIST
// the identity may not make is not tried again for the memo's TTL.
func (m *Manager) list(ctx context.Context, g *listGroup) []*unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(g.gvk.GroupVersion().WithKind(g.gvk.Kind + "List"))
	if err := m.Client.List(ctx, list, client.InNamespace(g.namespace), g.labels); err != nil {
		if apierrors.IsForbidden(err) {
			m.Memo.refuseList(g.key)
		}
		return nil
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		item.SetGroupVersionKind(g.gvk)
		out[i] = item
	}
	return out
}
