package webui

import (
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// lookup is what the image chain reads of the store: one object, or every
// watched object of a kind (none when the kind's CRD is not installed or
// the user may not list it).
type lookup interface {
	get(kind, namespace, name string) *unstructured.Unstructured
	listKind(kind string) []*unstructured.Unstructured
}

// imageChain is the chain u is part of (see ImageChain), nil for a kind
// that is not an image automation kind. Objects the user may not read are
// left out (a policy's repository, an automation's source: nil).
func imageChain(l lookup, u *unstructured.Unstructured) *ImageChain {
	var focus []*imagev1.ImagePolicy // the policies whose automations are shown
	switch u.GetKind() {
	case imagev1.ImageUpdateAutomationKind:
		a, ok := convert[imagev1.ImageUpdateAutomation](u)
		if !ok {
			return nil
		}
		return &ImageChain{Automations: []ImageAutomation{imageAutomation(l, u, a, nil)}}
	case imagev1.ImagePolicyKind:
		p, ok := convert[imagev1.ImagePolicy](u)
		if !ok {
			return nil
		}
		focus = []*imagev1.ImagePolicy{p}
	case imagev1.ImageRepositoryKind:
		for _, pu := range l.listKind(imagev1.ImagePolicyKind) {
			if p, ok := convert[imagev1.ImagePolicy](pu); ok && scans(p, u.GetNamespace(), u.GetName()) {
				focus = append(focus, p)
			}
		}
	default:
		return nil
	}
	out := &ImageChain{Automations: []ImageAutomation{}}
	read := map[string]bool{} // focus policies some automation reads, by name
	inFocus := map[string]bool{}
	for _, p := range focus {
		inFocus[p.Namespace+"/"+p.Name] = true
	}
	// A policy's or repository's page shows, of each automation, only the
	// policies of that page: listing every policy of every automation would
	// grow as automations × policies.
	keep := func(p *imagev1.ImagePolicy) bool { return inFocus[p.Namespace+"/"+p.Name] }
	for _, au := range l.listKind(imagev1.ImageUpdateAutomationKind) {
		a, ok := convert[imagev1.ImageUpdateAutomation](au)
		if !ok {
			continue
		}
		reads := false
		for _, p := range focus {
			if p.Namespace == a.Namespace && selects(a, p) {
				reads, read[p.Namespace+"/"+p.Name] = true, true
			}
		}
		if reads {
			out.Automations = append(out.Automations, imageAutomation(l, au, a, keep))
		}
	}
	for _, p := range focus {
		if !read[p.Namespace+"/"+p.Name] {
			out.Policies = append(out.Policies, imagePolicy(l, p, nil))
		}
	}
	return out
}

// imageAutomation is one automation with its source and the policies it
// reads: those keep accepts (all when keep is nil), the others counted.
func imageAutomation(l lookup, u *unstructured.Unstructured, a *imagev1.ImageUpdateAutomation, keep func(*imagev1.ImagePolicy) bool) ImageAutomation {
	out := ImageAutomation{ImageNode: imageNode(u), Policies: []ImagePolicy{}, LastPushCommit: a.Status.LastPushCommit,
		LastRun: timeOf(a.Status.LastAutomationRunTime), LastPushTime: timeOf(a.Status.LastPushTime), Revision: a.Status.ObservedSourceRevision}
	ref := a.Spec.SourceRef
	out.SourceRef = Ref{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
	if out.SourceRef.Namespace == "" {
		out.SourceRef.Namespace = a.Namespace
	}
	if src := l.get(out.SourceRef.Kind, out.SourceRef.Namespace, out.SourceRef.Name); src != nil {
		n := imageNode(src)
		out.Source = &n
	}
	if g := a.Spec.GitSpec; g != nil {
		if g.Push != nil && g.Push.Branch != "" {
			out.PushBranch = g.Push.Branch
		} else if g.Checkout != nil {
			out.PushBranch = g.Checkout.Reference.Branch
		}
		if g.Commit.SigningKey != nil {
			out.SigningKey = g.Commit.SigningKey.SecretRef.Name
		}
	}
	for _, pu := range l.listKind(imagev1.ImagePolicyKind) {
		p, ok := convert[imagev1.ImagePolicy](pu)
		if !ok || p.Namespace != a.Namespace || !selects(a, p) {
			continue
		}
		if keep != nil && !keep(p) {
			out.OtherPolicies++
			continue
		}
		var observed *ImageRef
		if r, ok := a.Status.ObservedPolicies[p.Name]; ok {
			observed = imageRef(&r)
		}
		out.Policies = append(out.Policies, imagePolicy(l, p, observed))
	}
	return out
}

// imagePolicy is one policy with the repository it scans.
func imagePolicy(l lookup, p *imagev1.ImagePolicy, observed *ImageRef) ImagePolicy {
	u := l.get(imagev1.ImagePolicyKind, p.Namespace, p.Name)
	out := ImagePolicy{LatestRef: imageRef(p.Status.LatestRef), Observed: observed}
	if u != nil {
		out.ImageNode = imageNode(u)
	}
	rr := p.Spec.ImageRepositoryRef
	out.RepositoryRef = Ref{Kind: imagev1.ImageRepositoryKind, Namespace: rr.Namespace, Name: rr.Name}
	if out.RepositoryRef.Namespace == "" {
		out.RepositoryRef.Namespace = p.Namespace
	}
	ru := l.get(imagev1.ImageRepositoryKind, out.RepositoryRef.Namespace, rr.Name)
	if r, ok := convert[imagev1.ImageRepository](ru); ok {
		ir := &ImageRepository{ImageNode: imageNode(ru), Image: r.Spec.Image}
		if s := r.Status.LastScanResult; s != nil {
			ir.LastScan, ir.TagCount = timeOf(&s.ScanTime), s.TagCount
		}
		out.Repository = ir
	}
	return out
}

// selects: the automation reads the policy (same namespace checked by the
// caller): its spec.policySelector matches the policy's labels, or it has
// none. A selector that does not parse selects nothing, as the controller
// then reads no policy.
func selects(a *imagev1.ImageUpdateAutomation, p *imagev1.ImagePolicy) bool {
	if a.Spec.PolicySelector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(a.Spec.PolicySelector)
	return err == nil && sel.Matches(labels.Set(p.Labels))
}

// scans: the policy's spec.imageRepositoryRef names the repository
// (namespace defaulting to the policy's).
func scans(p *imagev1.ImagePolicy, namespace, name string) bool {
	ns := p.Spec.ImageRepositoryRef.Namespace
	if ns == "" {
		ns = p.Namespace
	}
	return ns == namespace && p.Spec.ImageRepositoryRef.Name == name
}

func imageNode(u *unstructured.Unstructured) ImageNode {
	return ImageNode{Summary: summarize(u), Conditions: conditions(u)}
}

func imageRef(r *imagev1.ImageRef) *ImageRef {
	if r == nil {
		return nil
	}
	return &ImageRef{Name: r.Name, Tag: r.Tag, Digest: r.Digest}
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	v := t.UTC()
	return &v
}

// convert is u as the API type T; false for nil or content that does not
// convert.
func convert[T any](u *unstructured.Unstructured) (*T, bool) {
	if u == nil {
		return nil, false
	}
	o := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
		return nil, false
	}
	return o, true
}

// imageInputs are what an image object reads, for the graph's "source"
// edges: a policy's repository, an automation's policies (its GitRepository
// is its spec.sourceRef, drawn as any source).
func imageInputs(l lookup, u *unstructured.Unstructured) []Ref {
	switch u.GetKind() {
	case imagev1.ImagePolicyKind:
		if p, ok := convert[imagev1.ImagePolicy](u); ok {
			ns := p.Spec.ImageRepositoryRef.Namespace
			if ns == "" {
				ns = p.Namespace
			}
			return []Ref{{Kind: imagev1.ImageRepositoryKind, Namespace: ns, Name: p.Spec.ImageRepositoryRef.Name}}
		}
	case imagev1.ImageUpdateAutomationKind:
		a, ok := convert[imagev1.ImageUpdateAutomation](u)
		if !ok {
			return nil
		}
		var out []Ref
		for _, pu := range l.listKind(imagev1.ImagePolicyKind) {
			if p, ok := convert[imagev1.ImagePolicy](pu); ok && p.Namespace == a.Namespace && selects(a, p) {
				out = append(out, Ref{Kind: imagev1.ImagePolicyKind, Namespace: p.Namespace, Name: p.Name})
			}
		}
		return out
	}
	return nil
}
