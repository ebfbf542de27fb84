package controllerkit

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Serve runs srv until ctx ends, then shuts it down, waiting at most 5s for
// requests in flight. It returns ListenAndServe's error, or Shutdown's;
// nil after a clean shutdown. The caller sets srv's address, handler and
// timeouts.
func Serve(ctx context.Context, srv *http.Server) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
