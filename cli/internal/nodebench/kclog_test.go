package nodebench

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// reconcileSummary sums up kustomize-controller's log lines "Reconciliation
// finished in <d>" of one revision: how many, the median and total of the
// durations, and which of them was the application's (1-based order of
// finishing). It says why one mode applies the application later.
func reconcileSummary(log, head string) string {
	var ds []time.Duration
	var total time.Duration
	app := 0
	for _, l := range strings.Split(log, "\n") {
		var e struct{ Msg, Name, Revision string }
		if json.Unmarshal([]byte(l), &e) != nil || !strings.HasSuffix(e.Revision, head) {
			continue
		}
		rest, ok := strings.CutPrefix(e.Msg, "Reconciliation finished in ")
		if !ok {
			continue
		}
		d, err := time.ParseDuration(strings.TrimSuffix(strings.Split(rest, ",")[0], ","))
		if err != nil {
			continue
		}
		ds, total = append(ds, d), total+d
		if e.Name == appKs {
			app = len(ds)
		}
	}
	if len(ds) == 0 {
		return "no reconcile of it logged"
	}
	slices.Sort(ds)
	return fmt.Sprintf("%d reconciles, median %s, total %s, the application's finished %d of %d",
		len(ds), ds[len(ds)/2].Round(time.Millisecond), total.Round(time.Millisecond), app, len(ds))
}
