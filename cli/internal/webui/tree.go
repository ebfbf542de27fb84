package webui

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"github.com/eddyops/eddy/cli/internal/inspect"
	"github.com/eddyops/eddy/cli/internal/kinds"
	"github.com/eddyops/eddy/cli/internal/status"
	"github.com/eddyops/eddy/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// tree answers the resource tree of a Kustomization or HelmRelease, read
// live with the user's credentials (inventory objects are not watched).
func (a *api) tree(w http.ResponseWriter, r *http.Request) {
	kind, ns, name := r.PathValue("kind"), nsParam(r), r.PathValue("name")
	if k, ok := kinds.ByKind(kind); !ok || !k.Applier {
		writeError(w, http.StatusBadRequest, "a tree is of a Kustomization or a HelmRelease")
		return
	}
	if a.st.get(kind, ns, name) == nil {
		writeError(w, http.StatusNotFound, notReadable)
		return
	}
	n, err := inspect.Tree(r.Context(), a.client, kind, ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
			writeError(w, http.StatusNotFound, notReadable)
			return
		}
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	writeJSON(w, treeNode(n))
}

func treeNode(n *inspect.Node) *TreeNode {
	t := &TreeNode{Ref: Ref{APIVersion: n.APIVersion, Kind: n.Kind, Namespace: n.Namespace, Name: n.Name}, Health: n.Health, Message: n.Message}
	for _, c := range n.Children {
		t.Children = append(t.Children, treeNode(c))
	}
	return t
}

// drift lists the drift Eddy recorded: kustomize-controller's
// DriftCorrected events (one per object, with its fields) and
// helm-controller's DriftDetected events (one per changed object of the
// release), newest first; ?owner=Kind/namespace/name keeps one owner's.
// The drift is read from the event's ssa.DriftAnnotation, else parsed from
// its message (see eventDrift).
func (a *api) drift(w http.ResponseWriter, r *http.Request) {
	owner := r.URL.Query().Get("owner")
	out := DriftList{Drift: []Drift{}}
	for _, ev := range a.st.eventsWithReason("Kustomization", "DriftCorrected") {
		o := Ref{Kind: "Kustomization", Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}
		if owner != "" && owner != o.Kind+"/"+o.Namespace+"/"+o.Name {
			continue
		}
		objects, ok := eventDrift(ev, func(msg string) ([]ssa.ObjectDrift, bool) {
			object, fields, ok := ssa.ParseDriftMessage(msg)
			return []ssa.ObjectDrift{{Object: object, State: "changed", Fields: fields}}, ok
		})
		if !ok {
			continue
		}
		for _, od := range objects {
			out.Drift = append(out.Drift, Drift{Owner: o, Object: a.inventoryRef(o, od.Object), Fields: driftFields(od.Fields),
				Time: status.EventTime(ev), Count: max(ev.Count, 1), Message: ev.Message, Reason: ev.Reason})
		}
	}
	for _, ev := range a.st.eventsWithReason("HelmRelease", "DriftDetected") {
		o := Ref{Kind: "HelmRelease", Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}
		if owner != "" && owner != o.Kind+"/"+o.Namespace+"/"+o.Name {
			continue
		}
		objects, ok := eventDrift(ev, func(msg string) ([]ssa.ObjectDrift, bool) {
			_, objects, ok := ssa.ParseReleaseDriftMessage(msg)
			return objects, ok
		})
		if !ok {
			continue
		}
		for _, od := range objects {
			if od.State != "changed" {
				continue
			}
			out.Drift = append(out.Drift, Drift{Owner: o, Object: refFromString(od.Object), Fields: driftFields(od.Fields),
				Time: status.EventTime(ev), Count: max(ev.Count, 1), Message: ev.Message, Reason: ev.Reason})
		}
	}
	sort.SliceStable(out.Drift, func(i, j int) bool { return out.Drift[i].Time.After(out.Drift[j].Time) })
	writeJSON(w, out)
}

// eventDrift is the drift of a drift event: its ssa.DriftAnnotation, or,
// when it has none (recorded before the annotation, or drift too large
// for it) or its message was combined from similar events, parse applied
// to its message. client-go's correlator updates the message of a combined
// event with each event it combines, never its annotations, so only the
// message is current there.
func eventDrift(ev corev1.Event, parse func(msg string) ([]ssa.ObjectDrift, bool)) ([]ssa.ObjectDrift, bool) {
	msg := uncombined(ev.Message)
	if v, ok := ev.Annotations[ssa.DriftAnnotation]; ok && msg == ev.Message {
		if objects, ok := ssa.ParseDriftAnnotation(v); ok {
			return objects, true
		}
	}
	return parse(msg)
}

// driftFields turns drift as a dry-run found it (desired → live) into the
// page's old → new: old what Git says, new what another manager wrote.
func driftFields(fs []ssa.FieldDrift) []FieldDrift {
	out := make([]FieldDrift, 0, len(fs))
	for _, f := range fs {
		da, la := f.Absent()
		d := FieldDrift{Path: f.Path, Old: plainJSON(f.Desired), New: plainJSON(f.Live), Manager: f.Manager}
		if da {
			d.Old = ""
		}
		if la {
			d.New = ""
		}
		out = append(out, d)
	}
	return out
}

// refFromString reads `Kind/namespace/name` or `Kind/name`.
func refFromString(s string) Ref {
	p := strings.SplitN(s, "/", 3)
	switch len(p) {
	case 3:
		return Ref{Kind: p[0], Namespace: p[1], Name: p[2]}
	case 2:
		return Ref{Kind: p[0], Name: p[1]}
	}
	return Ref{Name: s}
}

// inventoryRef is the drifted object with its apiVersion, found in the
// owner's inventory (the event names kind, namespace and name only).
func (a *api) inventoryRef(owner Ref, object string) Ref {
	ref := refFromString(object)
	u := a.st.get(owner.Kind, owner.Namespace, owner.Name)
	if u == nil {
		return ref
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "entries")
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		meta, err := ssa.ParseID(str(m, "id"))
		if err != nil || meta.GroupKind.Kind != ref.Kind || meta.Namespace != ref.Namespace || meta.Name != ref.Name {
			continue
		}
		ref.APIVersion = str(m, "v")
		if meta.GroupKind.Group != "" {
			ref.APIVersion = meta.GroupKind.Group + "/" + ref.APIVersion
		}
		break
	}
	return ref
}

// diff builds a Kustomization from its source's artifact and dry-runs it
// against the cluster, with the user's credentials.
func (a *api) diff(w http.ResponseWriter, r *http.Request) {
	ns, name := nsParam(r), r.PathValue("name")
	u := a.st.get("Kustomization", ns, name)
	if u == nil {
		writeError(w, http.StatusNotFound, notReadable)
		return
	}
	var ks kustomizev1.Kustomization
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ks); err != nil {
		writeError(w, http.StatusInternalServerError, "reading the Kustomization: "+err.Error())
		return
	}
	rev, diffs, err := inspect.DiffKustomization(r.Context(), a.s.opts.Config, a.client, &ks)
	if err != nil {
		code := http.StatusBadGateway
		if apierrors.IsForbidden(err) { // a dry-run or read the user may not do
			code = http.StatusForbidden
		}
		writeError(w, code, err.Error())
		return
	}
	out := DiffResult{Revision: rev, Objects: make([]ObjectDiff, 0, len(diffs))}
	for _, d := range diffs {
		od := ObjectDiff{Object: Ref{APIVersion: d.APIVersion, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}, Action: d.Action}
		secret := d.APIVersion == "v1" && d.Kind == "Secret"
		for _, f := range driftFields(d.Fields) {
			// Here old is the live value and new the one Git would apply.
			f.Old, f.New = f.New, f.Old
			if secret && strings.Contains(f.Path, "last-applied-configuration") {
				f.Old, f.New = redacted(f.Old), redacted(f.New) // kubectl's copy of the values
			}
			od.Fields = append(od.Fields, f)
		}
		out.Objects = append(out.Objects, od)
	}
	writeJSON(w, out)
}

// plainJSON re-encodes a JSON value without Go's HTML escapes (\u003c for
// '<'): the page shows it as text, as the user wrote it. Anything else
// (a masked value) is returned as it is.
func plainJSON(v string) string {
	var x any
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber() // 12345678901234567890 stays as written
	if dec.Decode(&x) != nil || dec.More() {
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(x) != nil {
		return v
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// uncombined is an event message without the prefix client-go's event
// aggregator puts on the 11th similar event (same object and reason) of
// 10 minutes.
func uncombined(msg string) string {
	return strings.TrimPrefix(msg, "(combined from similar events): ")
}

func redacted(v string) string {
	if v == "" {
		return ""
	}
	return `"(redacted)"`
}
