package ssa

import "encoding/json"

// DriftAnnotation is the annotation of a Kubernetes Event that carries the
// drift its message reports, as JSON: a list of objects,
// `[{"object":"<Kind>/<ns>/<name>","state":"changed","fields":[{"path":…,
// "desired":…,"live":…,"desiredAbsent":…,"liveAbsent":…,"manager":…}]}]`,
// values as in FieldDrift (JSON text), masked as the message is. It is set
// on kustomize-controller's DriftCorrected (one object) and
// helm-controller's DriftDetected (the release's objects) events, on the
// Kubernetes Event only: notification-controller payloads stay as they
// were. Readers (the web UI) fall back to parsing the message when it is
// absent: events recorded before it existed, or drift over
// MaxDriftAnnotationSize.
const DriftAnnotation = "eddy.dev/drift"

// MaxDriftAnnotationSize is the largest DriftAnnotation value in bytes
// (64 KiB), a quarter of what the API server allows for all of an
// object's annotations; larger drift is left to the message.
const MaxDriftAnnotationSize = 64 << 10

// driftObjectJSON and driftFieldJSON are DriftAnnotation's JSON.
type driftObjectJSON struct {
	Object string           `json:"object"`
	State  string           `json:"state,omitempty"`
	Fields []driftFieldJSON `json:"fields,omitempty"`
}

type driftFieldJSON struct {
	Path          string `json:"path"`
	Desired       string `json:"desired"`
	Live          string `json:"live"`
	DesiredAbsent bool   `json:"desiredAbsent,omitempty"`
	LiveAbsent    bool   `json:"liveAbsent,omitempty"`
	Manager       string `json:"manager,omitempty"`
}

// DriftAnnotations returns the Event annotations that carry objects:
// DriftAnnotation with each string (object, path, values, manager) passed
// through mask, the masker of the event's message, so the annotation
// holds no value the message hides. nil when the JSON would be longer
// than MaxDriftAnnotationSize. mask may be nil (no masking).
func DriftAnnotations(objects []ObjectDrift, mask func(string) string) map[string]string {
	if mask == nil {
		mask = func(s string) string { return s }
	}
	out := make([]driftObjectJSON, len(objects))
	for i, o := range objects {
		j := driftObjectJSON{Object: mask(o.Object), State: o.State}
		for _, f := range o.Fields {
			j.Fields = append(j.Fields, driftFieldJSON{Path: mask(f.Path), Desired: mask(f.Desired), Live: mask(f.Live),
				DesiredAbsent: f.desiredAbsent, LiveAbsent: f.liveAbsent, Manager: mask(f.Manager)})
		}
		out[i] = j
	}
	b, err := json.Marshal(out)
	if err != nil || len(b) > MaxDriftAnnotationSize {
		return nil
	}
	return map[string]string{DriftAnnotation: string(b)}
}

// ParseDriftAnnotation reads the objects of a DriftAnnotation value; ok
// false when v is not one.
func ParseDriftAnnotation(v string) (objects []ObjectDrift, ok bool) {
	var in []driftObjectJSON
	if err := json.Unmarshal([]byte(v), &in); err != nil {
		return nil, false
	}
	objects = make([]ObjectDrift, len(in))
	for i, j := range in {
		if j.Object == "" {
			return nil, false
		}
		o := ObjectDrift{Object: j.Object, State: j.State}
		for _, f := range j.Fields {
			o.Fields = append(o.Fields, FieldDrift{Path: f.Path, Desired: f.Desired, Live: f.Live, Manager: f.Manager,
				desiredAbsent: f.DesiredAbsent, liveAbsent: f.LiveAbsent})
		}
		objects[i] = o
	}
	return objects, true
}
