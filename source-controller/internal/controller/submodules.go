package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/eddyops/eddy/pkg/redact"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

// Submodules are fetched by Eddy itself rather than by go-git's recursive
// update, which gives every submodule URL the parent's credentials (Flux
// does that): here the GitRepository's credentials go only to its own
// origin, and local repositories are never read.

// submoduleError is the failure of one submodule: path is its path in the
// checkout (nested ones joined, e.g. "vendor/lib/deep"), url the URL it
// was fetched from ("" when refused before any fetch).
type submoduleError struct {
	path, url string
	// anonymous is true when it was fetched without the credentials.
	anonymous bool
	err       error
}

func (e *submoduleError) Error() string { return e.describe(e.err.Error()) }

func (e *submoduleError) Unwrap() error { return e.err }

// describe formats why (the cause as a message) with the submodule's path
// and, for a fetch, its URL with any credentials masked.
func (e *submoduleError) describe(why string) string {
	switch {
	case e.url == "":
		return fmt.Sprintf("submodule '%s': %s", e.path, why)
	case e.anonymous:
		return fmt.Sprintf("submodule '%s': fetching '%s' without credentials (they go only to the GitRepository's host) failed: %s",
			e.path, redact.URL(e.url), why)
	}
	return fmt.Sprintf("submodule '%s': fetching '%s' failed: %s", e.path, redact.URL(e.url), why)
}

// Refusals of a submodule URL; their texts carry no path of the
// controller's machine.
var (
	errSubmoduleFile  = errors.New("file:// URLs are refused: a submodule must come from a Git server")
	errSubmoduleLocal = errors.New("local paths are refused: a submodule must come from a Git server")
	errSubmoduleSSH   = errors.New("an SSH submodule needs a key, and the GitRepository's key goes only to its own host and scheme")
)

// defaultPorts fill in a URL's port so that https://h and https://h:443
// are the same origin.
var defaultPorts = map[string]string{"http": "80", "https": "443", "ssh": "22", "git": "9418"}

// remoteURL parses a Git remote address: a URL of scheme http, https, ssh
// or git, or git's scp-like form `[user@]host:path` (returned as ssh with
// path as written). file:// URLs, local paths, transport helpers
// (`<helper>::<address>`) and other schemes are errors.
func remoteURL(raw string) (*url.URL, error) {
	if strings.Contains(raw, "::") {
		return nil, errors.New("transport helper addresses (<helper>::<address>) are refused")
	}
	if scheme, _, ok := strings.Cut(raw, "://"); ok {
		u, err := url.Parse(raw)
		switch {
		case strings.EqualFold(scheme, "file"):
			return nil, errSubmoduleFile
		case err != nil:
			return nil, fmt.Errorf("the URL cannot be parsed: %s", redact.Message(err.Error()))
		case defaultPorts[u.Scheme] == "":
			return nil, fmt.Errorf("URL scheme '%s' is not supported", u.Scheme)
		case u.Hostname() == "":
			return nil, errors.New("the URL has no host")
		}
		return u, nil
	}
	// git's rule: a colon before any slash makes `host:path`, else a path.
	colon, slash := strings.IndexByte(raw, ':'), strings.IndexByte(raw, '/')
	if colon <= 0 || (slash >= 0 && slash < colon) {
		return nil, errSubmoduleLocal
	}
	u := &url.URL{Scheme: "ssh", Host: raw[:colon], Path: raw[colon+1:]}
	if at := strings.LastIndexByte(u.Host, '@'); at >= 0 {
		u.User, u.Host = url.User(u.Host[:at]), u.Host[at+1:]
	}
	if u.Host == "" {
		return nil, errors.New("the URL has no host")
	}
	return u, nil
}

// sameOrigin reports whether a and b have the same scheme, host (case
// insensitive) and port (the scheme's default when absent).
func sameOrigin(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return defaultPorts[strings.ToLower(u.Scheme)]
	}
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// resolveRelative resolves a relative submodule URL (`./x`, `../x`)
// against base, the address of the repository whose .gitmodules holds it,
// as git does: base is taken as a directory, so each `..` drops one
// element of its path (`../lib.git` next to https://h/org/app.git is
// https://h/org/lib.git). Climbing above the path's root is an error:
// git would then reach into the host part.
func resolveRelative(base, rel string) (string, error) {
	u, err := remoteURL(base)
	if err != nil {
		return "", err
	}
	var elems []string
	for _, e := range strings.Split(u.Path, "/") {
		if e != "" {
			elems = append(elems, e)
		}
	}
	for _, e := range strings.Split(rel, "/") {
		switch e {
		case "", ".":
		case "..":
			if len(elems) == 0 {
				return "", fmt.Errorf("relative URL '%s' climbs above the root of its parent's host", rel)
			}
			elems = elems[:len(elems)-1]
		default:
			elems = append(elems, e)
		}
	}
	joined := strings.Join(elems, "/")
	if !strings.Contains(base, "://") { // scp-like: keep its form and its path's anchoring
		host, p, _ := strings.Cut(base, ":")
		if strings.HasPrefix(p, "/") {
			joined = "/" + joined
		}
		return host + ":" + joined, nil
	}
	out := *u
	out.Path, out.RawPath, out.RawQuery, out.Fragment = "/"+joined, "", "", ""
	return out.String(), nil
}

// submoduleRemote decides where a submodule comes from and with what:
// raw is its URL in .gitmodules, base the address of the repository
// holding that file, origin the GitRepository's spec.url. It returns the
// address to fetch and whether the GitRepository's credentials go with it:
// only when it has origin's scheme, host and port. A relative URL resolves
// against base (so one next to the GitRepository keeps its host). file://
// URLs and local paths are refused; so is SSH elsewhere (no anonymous SSH:
// it would fall back to the controller's own agent).
func submoduleRemote(origin *url.URL, base, raw string) (addr string, withCredentials bool, err error) {
	addr = raw
	if strings.HasPrefix(raw, "./") || strings.HasPrefix(raw, "../") {
		if addr, err = resolveRelative(base, raw); err != nil {
			return "", false, err
		}
	}
	u, err := remoteURL(addr)
	if err != nil {
		return "", false, err
	}
	withCredentials = sameOrigin(origin, u)
	if !withCredentials && u.Scheme == "ssh" {
		return "", false, errSubmoduleSSH
	}
	return addr, withCredentials, nil
}

// updateSubmodules initialises, fetches and checks out the submodules of
// wt and, depth levels further down, theirs (go-git's recursion depth
// counts the same way). base is the address of wt's
// repository, prefix its path in the checkout; origin and a are the
// GitRepository's URL and credentials, given only to submodules of
// origin's scheme, host and port. Other submodules are fetched without
// them (no auth, client certificate or CA bundle; the proxy still
// applies). Errors are *submoduleError.
func updateSubmodules(ctx context.Context, wt *git.Worktree, base, prefix string, origin *url.URL, a *gitAuth, depth int) error {
	subs, err := wt.Submodules()
	if err != nil {
		return err
	}
	for _, s := range subs {
		c := s.Config()
		name := path.Join(prefix, c.Path)
		addr, creds, err := submoduleRemote(origin, base, c.URL)
		if err != nil {
			return &submoduleError{path: name, err: err}
		}
		// go-git's Repository creates the submodule's remote from this.
		c.URL = addr
		opts := &git.FetchOptions{RemoteName: git.DefaultRemoteName, ProxyOptions: a.Proxy}
		if creds {
			opts.Auth, opts.CABundle, opts.ClientCert, opts.ClientKey = a.Method, a.CABundle, a.ClientCert, a.ClientKey
		}
		sub, err := fetchSubmodule(ctx, s, opts)
		if err != nil {
			return &submoduleError{path: name, url: addr, anonymous: !creds, err: err}
		}
		if depth > 0 {
			if err := updateSubmodules(ctx, sub, addr, name, origin, a, depth-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// fetchSubmodule initialises s, fetches its remote's branches with opts
// (and the recorded commit itself when no branch holds it) and checks the
// recorded commit out; it returns the submodule's work tree.
func fetchSubmodule(ctx context.Context, s *git.Submodule, opts *git.FetchOptions) (*git.Worktree, error) {
	st, err := s.Status() // before Init: only the recorded commit
	if err != nil {
		return nil, err
	}
	if st.Expected.IsZero() {
		return nil, errors.New("the commit records no submodule commit at its path")
	}
	if err := s.Init(); err != nil {
		return nil, err
	}
	r, err := s.Repository()
	if err != nil {
		return nil, err
	}
	if err := r.FetchContext(ctx, opts); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, err
	}
	if _, err := r.CommitObject(st.Expected); err != nil {
		byHash := *opts
		byHash.RefSpecs = []config.RefSpec{config.RefSpec("+" + st.Expected.String() + ":" + st.Expected.String())}
		if err := r.FetchContext(ctx, &byHash); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil, err
		}
	}
	w, err := r.Worktree()
	if err != nil {
		return nil, err
	}
	if err := w.Checkout(&git.CheckoutOptions{Hash: st.Expected, Force: true}); err != nil {
		return nil, fmt.Errorf("checkout of '%s' failed: %w", st.Expected, err)
	}
	return w, r.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, st.Expected))
}
