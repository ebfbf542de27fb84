// Package project enforces an AppProject's restrictions on an Application:
// the repositories it may render from, the destinations it may deploy to
// and the kinds it may deploy, with Argo CD's glob rules and messages
// (argocd-contract §8.1).
package project

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gobwas/glob"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

// Default is the spec of the "default" AppProject, the one Argo CD's API
// server creates when it is missing: every repository, every destination
// and every kind (argocd-contract §8.1).
func Default() argov1.AppProjectSpec {
	return argov1.AppProjectSpec{
		SourceRepos:              []string{"*"},
		Destinations:             []argov1.ApplicationDestination{{Server: "*", Namespace: "*"}},
		ClusterResourceWhitelist: []argov1.ClusterResourceRestrictionItem{{Group: "*", Kind: "*"}},
	}
}

// CheckSource returns nil when p permits sources from repoURL, else an
// error whose text is Argo CD's InvalidSpecError message "application repo
// <repoURL> is not permitted in project '<p>'". Rules, as Argo CD's: the URL
// and each spec.sourceRepos entry are normalised (NormalizeRepoURL); an
// entry is a glob in which `*` stops at `/` and `**` does not, "*" alone
// matches any URL; an entry starting with `!` denies the URLs its glob
// matches, and any deny entry that matches refuses the URL whatever the
// other entries say; a deny entry that does not match counts as a match,
// so a list of deny entries alone permits every other URL.
func CheckSource(p *argov1.AppProject, repoURL string) error {
	if sourcePermitted(p, repoURL) {
		return nil
	}
	return fmt.Errorf("application repo %s is not permitted in project '%s'", repoURL, p.Name)
}

func sourcePermitted(p *argov1.AppProject, repoURL string) bool {
	src := NormalizeRepoURL(repoURL)
	matched := false
	for _, entry := range p.Spec.SourceRepos {
		pattern := NormalizeRepoURL(entry)
		if deny(entry) {
			pattern = "!" + NormalizeRepoURL(entry[1:])
		}
		switch {
		case globMatch(pattern, src, '/'):
			matched = true
		case deny(pattern):
			return false
		}
	}
	return matched
}

// sshURL is an scp-like or ssh:// URL with a user: git@host:org/repo.
var sshURL = regexp.MustCompile(`^(ssh://)?([^/:]*?)@[^@]+$`)

// NormalizeRepoURL is a repository URL in the form Argo CD compares them:
// trimmed, lower-cased, an scp-like SSH URL (git@host:org/repo) written
// as host/path (git@host/org/repo), a trailing ".git" dropped, then
// re-rendered by net/url without an "ssh://" prefix; "" when net/url
// cannot parse it. A trailing "/" is kept, as Argo CD keeps it.
func NormalizeRepoURL(repo string) string {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if sshURL.MatchString(repo) && !strings.HasPrefix(repo, "ssh://") {
		repo = "ssh://" + strings.Replace(repo, ":", "/", 1)
	}
	u, err := url.Parse(strings.TrimSuffix(repo, ".git"))
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.String(), "ssh://")
}

// CheckDestination returns nil when p permits deploying to the cluster
// (server URL and/or cluster name) and namespace, else an error whose
// text is Argo CD's InvalidSpecError message "application destination
// server '<s>' and namespace '<namespace>' do not match any of the allowed
// destinations in project '<p>'", where <s> is name when it is not empty
// (Argo CD shows the name of a name-addressed destination) and server
// otherwise. Pass both the server and the name the destination resolves
// to when both are known, so that entries by either match, as Argo CD
// checks the resolved cluster. Rules: DestinationPermitted.
func CheckDestination(p *argov1.AppProject, server, name, namespace string) error {
	if DestinationPermitted(p, server, name, namespace) {
		return nil
	}
	shown := server
	if name != "" {
		shown = name
	}
	return fmt.Errorf("application destination server '%s' and namespace '%s' do not match any of the allowed destinations in project '%s'",
		shown, namespace, p.Name)
}

// DestinationPermitted applies spec.destinations as Argo CD does: an entry
// matches when its server glob matches server or its name glob matches
// name (each only when not empty), and its namespace glob matches
// namespace; "*" matches anything, `!` negates. The destination is
// refused, whatever other entries say, by an entry whose `!` name glob
// names the cluster, whose `!` server glob names the server while its
// namespace glob matches, or whose `!` namespace glob names the namespace
// while its server glob matches; otherwise it is permitted when some
// entry matched. Globs here have no separator: `*` spans `/` and `.`.
func DestinationPermitted(p *argov1.AppProject, server, name, namespace string) bool {
	matched := false
	for _, d := range p.Spec.Destinations {
		nameOK := name != "" && globMatch(d.Name, name)
		serverOK := server != "" && globMatch(d.Server, server)
		nsOK := globMatch(d.Namespace, namespace)
		switch {
		case (serverOK || nameOK) && nsOK:
			matched = true
		case !nameOK && deny(d.Name):
			return false
		case !serverOK && deny(d.Server) && nsOK:
			return false
		case !nsOK && deny(d.Namespace) && serverOK:
			return false
		}
	}
	return matched
}

// Permitted reports whether p lets an Application deploy an object of
// group and kind named name (argocd-contract §8.1). A cluster-scoped kind
// needs an entry of clusterResourceWhitelist matching it (an empty list
// allows none) and none of clusterResourceBlacklist; entries there match
// group and kind and, when they give one, the name. A namespaced kind is
// allowed unless namespaceResourceWhitelist is set (an empty but present
// list allows none) and misses it, or namespaceResourceBlacklist matches
// it. Group, kind and name are shell globs (filepath.Match), as in Argo CD.
func Permitted(p *argov1.AppProject, group, kind, name string, clusterScoped bool) bool {
	s := &p.Spec
	if !clusterScoped {
		white := s.NamespaceResourceWhitelist == nil || inGroupKinds(group, kind, s.NamespaceResourceWhitelist)
		return white && !inGroupKinds(group, kind, s.NamespaceResourceBlacklist)
	}
	return inRestrictions(group, kind, name, s.ClusterResourceWhitelist) &&
		!inRestrictions(group, kind, name, s.ClusterResourceBlacklist)
}

func inGroupKinds(group, kind string, list []metav1.GroupKind) bool {
	for _, it := range list {
		if shellMatch(it.Kind, kind) && shellMatch(it.Group, group) {
			return true
		}
	}
	return false
}

func inRestrictions(group, kind, name string, list []argov1.ClusterResourceRestrictionItem) bool {
	for _, it := range list {
		if shellMatch(it.Kind, kind) && shellMatch(it.Group, group) && (it.Name == "" || shellMatch(it.Name, name)) {
			return true
		}
	}
	return false
}

// shellMatch is filepath.Match with a malformed pattern matching nothing.
func shellMatch(pattern, s string) bool {
	ok, err := filepath.Match(pattern, s)
	return ok && err == nil
}

func deny(pattern string) bool { return strings.HasPrefix(pattern, "!") }

// globMatch matches s against a glob (gobwas syntax: `*`, `**`, `?`,
// `[...]`, `{a,b}`) that may start with `!` to negate it; "*" matches
// anything, and a pattern that does not compile matches nothing.
func globMatch(pattern, s string, separators ...rune) bool {
	if deny(pattern) {
		return !compiledMatch(pattern[1:], s, separators...)
	}
	if pattern == "*" {
		return true
	}
	return compiledMatch(pattern, s, separators...)
}

func compiledMatch(pattern, s string, separators ...rune) bool {
	g, err := glob.Compile(pattern, separators...)
	return err == nil && g.Match(s)
}
