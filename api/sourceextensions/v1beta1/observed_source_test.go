package v1beta1

import "testing"

// TestSourcesDigestIgnoresOrderAndTracksEachField: the digest depends on
// what was read, not on map order, and changes with any field.
func TestSourcesDigestIgnoresOrderAndTracksEachField(t *testing.T) {
	a := map[string]ObservedSource{
		"app": {Digest: "sha256:aa", Revision: "main@sha1:1", URL: "http://s/a.tar.gz"},
		"cfg": {Digest: "sha256:bb", Revision: "v1@sha256:2", URL: "http://s/b.tar.gz"},
	}
	d := SourcesDigest(a)
	for i := 0; i < 10; i++ {
		if SourcesDigest(a) != d {
			t.Fatal("digest depends on map order")
		}
	}
	// The hash of the one line "app=[digest=sha256:aa,revision=main@sha1:1,url=http://s/a.tar.gz]".
	one := SourcesDigest(map[string]ObservedSource{"app": a["app"]})
	// (computed apart from Go: python3 hashlib.sha256 of that line).
	if want := "sha256:342afcf2dfcb5e829eecad1560b4dd78cdc393ea238714efb64238ba219e31a0"; one != want {
		t.Fatalf("digest %q, want %q", one, want)
	}
	for _, change := range []func(*ObservedSource){
		func(s *ObservedSource) { s.Digest = "sha256:cc" },
		func(s *ObservedSource) { s.Revision = "main@sha1:3" },
		func(s *ObservedSource) { s.URL = "http://t/a.tar.gz" },
	} {
		b := map[string]ObservedSource{"app": a["app"], "cfg": a["cfg"]}
		s := b["app"]
		change(&s)
		b["app"] = s
		if SourcesDigest(b) == d {
			t.Errorf("digest unchanged by %+v", s)
		}
	}
}
