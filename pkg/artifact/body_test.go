package artifact

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/opencontainers/go-digest"
)

func TestABodyLongerThanTheCapNeverWritesPastIt(t *testing.T) {
	const limit = 1000
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("0"), limit+500)) // no Content-Length past the first write's buffer
	}))
	defer srv.Close()
	dst, err := newBody(limit)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.close()
	f := &Fetcher{Client: srv.Client(), Retries: 0}
	err = f.download(context.Background(), srv.URL, digest.FromString("x"), limit, dst)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("download: %v, want ErrTooLarge", err)
	}
	if n := dst.mem.Len(); n > limit {
		t.Errorf("%d bytes written, past the cap of %d", n, limit)
	}
}
