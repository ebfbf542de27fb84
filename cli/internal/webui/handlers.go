package webui

import (
	"context"
	"net/http"
)

// handler builds the routes. The store starts watching here.
func (s *Server) handler(ctx context.Context) (http.Handler, error) {
	static, err := staticFiles()
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", static)
	return s.secure(mux), nil
}
