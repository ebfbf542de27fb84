package controllerkit

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// reconcileDuration is Flux's reconcile duration histogram, served on
// --metrics-addr: `gotk_reconcile_duration_seconds{kind,name,namespace}`.
var reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "gotk_reconcile_duration_seconds",
	Help:    "The duration in seconds of a reconciliation.",
	Buckets: prometheus.ExponentialBuckets(10e-3, 2, 10),
}, []string{"kind", "name", "namespace"})

func init() { metrics.Registry.MustRegister(reconcileDuration) }

// RecordDuration observes the duration of one reconcile of an object since start.
func RecordDuration(kind, namespace, name string, start time.Time) {
	reconcileDuration.WithLabelValues(kind, name, namespace).Observe(time.Since(start).Seconds())
}

// DeleteDuration drops the duration series of an object that is gone, so
// the metric's series follow the live objects instead of every object
// that ever existed (with 5,000 objects, about 6.5 MiB of histograms).
func DeleteDuration(kind, namespace, name string) {
	reconcileDuration.DeleteLabelValues(kind, name, namespace)
}
