package release

import (
	"slices"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	"github.com/eddyops/eddy/pkg/faultpoint"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Observer is a Helm storage driver that tells Observe each release it
// wrote (created or updated), as written: the snapshots of status.history
// are taken from these, so their digests are those of the stored objects.
type Observer struct {
	driver.Driver
	Observe func(*helmrelease.Release)
}

// Create stores rls under key, then observes it. A release stored as
// pending-* passes the fault point faultpoint.HelmMidUpgrade (test only):
// the action started and has not recorded its outcome.
func (d *Observer) Create(key string, rls *helmrelease.Release) error {
	if err := d.Driver.Create(key, rls); err != nil {
		return err
	}
	d.Observe(rls)
	if rls.Info != nil && rls.Info.Status.IsPending() {
		faultpoint.Hit(faultpoint.HelmMidUpgrade)
	}
	return nil
}

// Update stores rls under key, then observes it.
func (d *Observer) Update(key string, rls *helmrelease.Release) error {
	if err := d.Driver.Update(key, rls); err != nil {
		return err
	}
	d.Observe(rls)
	return nil
}

// Observed is a release as written to storage during an action: the
// release, its snapshot and its manifest at the time of the write.
type Observed struct {
	Release  *helmrelease.Release
	Snapshot helmv2.Snapshot
	Manifest string
}

// ObserveInto returns an Observer's Observe that appends each write to
// *into as an Observed with ociDigest; a later write of a release version
// replaces the earlier.
func ObserveInto(into *[]*Observed, ociDigest string) func(*helmrelease.Release) {
	return func(rel *helmrelease.Release) {
		o := &Observed{Release: rel, Snapshot: SnapshotOf(rel, ociDigest), Manifest: rel.Manifest}
		for i, p := range *into {
			if p.Snapshot.Version == o.Snapshot.Version && p.Snapshot.Name == o.Snapshot.Name {
				(*into)[i] = o
				return
			}
		}
		*into = append(*into, o)
	}
}

// Newest is the observed release of the highest version (the first of
// equal ones), nil when none was observed.
func Newest(observed []*Observed) *Observed {
	if len(observed) == 0 {
		return nil
	}
	newest := observed[0]
	for _, o := range observed {
		if o.Snapshot.Version > newest.Snapshot.Version {
			newest = o
		}
	}
	return newest
}

// Record returns history with the releases an action wrote: the newest
// version as a new snapshot (or replacing its own), the others replacing
// the snapshots of the same version; newest first. A replaced snapshot
// keeps its ociDigest, action (unless action is set, for the newest) and
// test hooks; a new one gets ociDigest (the chart's OCI digest for an
// install or upgrade, else "") and action. Flux compatible
// (observedReleases.recordOnObject, mutateOCIDigest).
func Record(history []helmv2.Snapshot, observed []*Observed, action, ociDigest string) []helmv2.Snapshot {
	if len(observed) == 0 {
		return history
	}
	h := slices.Clone(history)
	observed = slices.Clone(observed)
	slices.SortFunc(observed, func(a, b *Observed) int { return b.Snapshot.Version - a.Snapshot.Version })
	for i, o := range observed {
		j := slices.IndexFunc(h, func(s helmv2.Snapshot) bool {
			return s.Name == o.Snapshot.Name && s.Namespace == o.Snapshot.Namespace && s.Version == o.Snapshot.Version
		})
		switch {
		case j >= 0:
			s := o.withDigest(h[j].OCIDigest)
			s.Action = h[j].Action
			if i == 0 && action != "" {
				s.Action = action
			}
			s.TestHooks = h[j].TestHooks
			h[j] = s
		case i == 0:
			s := o.withDigest(ociDigest)
			s.Action = action
			h = append([]helmv2.Snapshot{s}, h...)
		}
	}
	Sort(h)
	return h
}

// withDigest is o's snapshot with the chart OCI digest digest.
func (o *Observed) withDigest(digest string) helmv2.Snapshot {
	if o.Snapshot.OCIDigest == digest || o.Release == nil {
		return o.Snapshot
	}
	return SnapshotOf(o.Release, digest)
}
