package controller

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// remoteSession is one upload-pack session with an HTTP(S) remote: its
// ref advertisement is the ref listing and, when a new commit is to be
// fetched, the fetch's too. A new commit so costs two requests to the
// server (refs, pack) rather than three (a listing, then a fetch that
// lists again): on the webhook path each is a `git upload-pack` run.
type remoteSession struct {
	sess transport.UploadPackSession
	adv  *packp.AdvRefs
}

// openSession lists the remote's refs as listRemote does (name → hash,
// annotated tags also as `<tag>^{}`, symbolic refs with their target's
// hash) and keeps the session open for fetchShallow; Close ends it.
func openSession(ctx context.Context, rawURL string, a *gitAuth) (*remoteSession, map[string]string, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, nil, err
	}
	ep.ClientCert, ep.ClientKey, ep.CaBundle, ep.Proxy = a.ClientCert, a.ClientKey, a.CABundle, a.Proxy
	c, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, err
	}
	sess, err := c.NewUploadPackSession(ep, a.Method)
	if err != nil {
		return nil, nil, err
	}
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		sess.Close()
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return nil, nil, errEmptyRepository
		}
		return nil, nil, err
	}
	s := &remoteSession{sess: sess, adv: adv}
	refs, err := s.refs()
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, refs, nil
}

// refs is the advertisement as listRemote returns it.
func (s *remoteSession) refs() (map[string]string, error) {
	all, err := s.adv.AllReferences()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var symbolic []*plumbing.Reference
	for _, r := range all {
		switch r.Type() {
		case plumbing.HashReference:
			out[r.Name().String()] = r.Hash().String()
		case plumbing.SymbolicReference:
			symbolic = append(symbolic, r)
		}
	}
	for name, h := range s.adv.Peeled {
		out[name+"^{}"] = h.String()
	}
	for _, r := range symbolic {
		if h, ok := out[r.Target().String()]; ok {
			out[r.Name().String()] = h
		}
	}
	if len(out) == 0 {
		return nil, errEmptyRepository
	}
	return out, nil
}

// Close ends the session.
func (s *remoteSession) Close() {
	if s != nil {
		_ = s.sess.Close()
	}
}

// fetchShallow fetches the object want (the advertised hash of ref, an
// annotated tag's own) into repo at depth 1 over the session, and points
// the local ref local at it: what a depth-1 FetchContext of ref does, the
// advertisement taken from the listing.
func (s *remoteSession) fetchShallow(ctx context.Context, repo *git.Repository, want plumbing.Hash, local plumbing.ReferenceName) (err error) {
	req := packp.NewUploadPackRequestFromCapabilities(s.adv.Capabilities)
	req.Depth = packp.DepthCommits(1)
	if err := req.Capabilities.Set(capability.Shallow); err != nil {
		return err
	}
	if s.adv.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return err
		}
	}
	req.Wants = []plumbing.Hash{want}
	resp, err := s.sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := resp.Close(); err == nil {
			err = cerr
		}
	}()
	if len(resp.Shallows) > 0 {
		if err := repo.Storer.SetShallow(resp.Shallows); err != nil {
			return err
		}
	}
	var r io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := packfile.UpdateObjectStorage(repo.Storer, r); err != nil {
		return err
	}
	if _, err := repo.Storer.EncodedObject(plumbing.AnyObject, want); err != nil {
		return fmt.Errorf("object %s not fetched: %w", want, err)
	}
	return repo.Storer.SetReference(plumbing.NewHashReference(local, want))
}
