package webui

import "net/http"

// The tree, drift and diff views read through cli/internal/inspect, which
// is being split out of the tree and diff commands; until it lands they
// answer 501.

func (a *api) tree(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusNotImplemented, "the resource tree is not built yet")
}

func (a *api) drift(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, DriftList{Drift: []Drift{}})
}

func (a *api) diff(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusNotImplemented, "the diff is not built yet")
}
