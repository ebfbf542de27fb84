// Package redact masks secrets before they reach a status message, an event
// or a log: the credentials a user may write in a URL (a token or a password
// in its userinfo), keeping the rest of what the user wrote (URL, Message),
// and secret values read from Secrets or decrypted, in every form a message
// can quote them in (Values).
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret in a message.
const Mask = "xxxxx"

// URL masks the userinfo of raw, which need not parse. For SSH URLs
// (`ssh://` and scp-like `user@host:path`) the user name is kept, as it is
// a login name such as `git`, and a password is masked (`ssh://git:xxxxx@host`);
// for any other scheme the whole userinfo is masked (`https://xxxxx@host`),
// since a lone user name is often a token (GitHub's `https://<token>@github.com`).
//
// The userinfo ends at the last '@' of the authority (up to the first '/',
// '?' or '#'); when the authority has none but holds a ':' and an '@'
// follows, a password with an unencoded '/', '?' or '#' cut it short and the
// userinfo ends at the last '@' of raw. A URL without userinfo is returned
// as it is.
//
// A go-getter forced getter prefix (kustomize's `git::https://...`) is kept.
func URL(raw string) string {
	if m := getterRE.FindString(raw); m != "" {
		return m + URL(raw[len(m):])
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !schemeRE.MatchString(scheme) {
		return scpLike(raw)
	}
	end := userinfoEnd(rest)
	if end < 0 {
		return raw
	}
	if strings.EqualFold(scheme, "ssh") || strings.HasSuffix(strings.ToLower(scheme), "+ssh") {
		return scheme + "://" + sshUserinfo(rest[:end]) + "@" + rest[end+1:]
	}
	return scheme + "://" + Mask + "@" + rest[end+1:]
}

var (
	getterRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*::`)
	schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)
)

// userinfoEnd is the index in rest (a URL after `scheme://`) of the '@'
// that ends the userinfo, or -1.
func userinfoEnd(rest string) int {
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		return at
	}
	if strings.Contains(authority, ":") && !strings.HasPrefix(authority, "[") {
		return strings.LastIndex(rest, "@")
	}
	return -1
}

// scpLike masks the password of an scp-like SSH address `user@host:path`.
func scpLike(raw string) string {
	head := raw
	if i := strings.Index(raw, "/"); i >= 0 {
		head = raw[:i]
	}
	at := strings.LastIndex(head, "@")
	if at < 0 {
		return raw
	}
	return sshUserinfo(raw[:at]) + "@" + raw[at+1:]
}

func sshUserinfo(userinfo string) string {
	if user, _, hasPassword := strings.Cut(userinfo, ":"); hasPassword {
		return user + ":" + Mask
	}
	return userinfo
}

// Quoted masks, wherever msg quotes it, the part of raw that URL masks:
// for library errors that quote a piece of raw without its scheme
// (go-containerregistry names the registry `user:password@host`), which
// Message does not recognize as a URL. msg is returned as it is when raw
// has no userinfo.
func Quoted(msg, raw string) string {
	masked := URL(raw)
	if masked == raw {
		return msg
	}
	p := 0
	for p < len(raw) && p < len(masked) && raw[p] == masked[p] {
		p++
	}
	i, j := len(raw), len(masked)
	for i > p && j > p && raw[i-1] == masked[j-1] {
		i, j = i-1, j-1
	}
	if i == p {
		return msg
	}
	return strings.ReplaceAll(msg, raw[p:i], masked[p:j])
}

// urlInMessage matches a URL in a message, up to the next white space.
var urlInMessage = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://\S+`)

// Message masks the userinfo (as URL does) of every `scheme://` URL in msg,
// for messages of libraries (a Git transport, an HTTP client) that quote
// the URL they were given or one derived from it.
func Message(msg string) string {
	return urlInMessage.ReplaceAllStringFunc(msg, URL)
}

// ParseURL is url.Parse with an error that carries no credential: the
// *url.Error names the URL masked as URL does, and its reason is the one
// url.Parse gives for the masked URL (the reason for raw may quote a piece
// of a password, as `invalid port ":<password>" after host`), or
// `net/url: invalid userinfo` when only the userinfo was wrong.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err == nil {
		return u, nil
	}
	masked := URL(raw)
	if masked == raw {
		return nil, err
	}
	if _, merr := url.Parse(masked); merr != nil {
		return nil, merr
	}
	return nil, &url.Error{Op: "parse", URL: masked, Err: errInvalidUserinfo}
}

var errInvalidUserinfo = errors.New("net/url: invalid userinfo")

// URLError returns the cause of err when err is a *url.Error, which quotes
// the request's URL (a webhook URL or one with credentials may be a
// secret); otherwise err.
func URLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
