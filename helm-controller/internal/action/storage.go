package action

import (
	"fmt"

	helmaction "helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// LastRelease returns the newest version of release name in cfg's
// storage, or driver.ErrReleaseNotFound.
func LastRelease(cfg *helmaction.Configuration, name string) (*helmrelease.Release, error) {
	rls, err := cfg.Releases.History(name)
	if err != nil {
		return nil, err
	}
	if len(rls) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	latest := rls[0]
	for _, r := range rls[1:] {
		if r.Version > latest.Version {
			latest = r
		}
	}
	return latest, nil
}

// Unlock marks the newest version of release name failed when it is left
// pending (a controller stopped during an action), so that the next action
// can act on it. It returns that release and the status it had; nil and
// "" when the newest version is not pending. An error with a nil release
// is one of reading storage, with a release one of writing it. Flux
// compatible (internal/reconcile/unlock.go).
func Unlock(cfg *helmaction.Configuration, name string) (*helmrelease.Release, helmrelease.Status, error) {
	rls, err := LastRelease(cfg, name)
	if err != nil {
		return nil, "", err
	}
	if rls.Info == nil || !rls.Info.Status.IsPending() {
		return nil, "", nil
	}
	was := rls.Info.Status
	rls.SetStatus(helmrelease.StatusFailed, fmt.Sprintf("Release unlocked from stale '%s' state", was))
	return rls, was, cfg.Releases.Update(rls)
}
