package registry

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// A hostile registry answers pages of one tag, each padded to under the
// byte bound, with an ETag and a new next page every time: the bound holds
// for the scan's pages in all, so the scan stops at once and the page cache
// does not grow by a page per request until the timeout.
func TestTagListBoundCountsEveryPageOfAScan(t *testing.T) {
	var pages atomic.Int64
	pad := strings.Repeat(" ", 40<<10)
	r := newRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if !strings.HasSuffix(req.URL.Path, "/tags/list") {
				next.ServeHTTP(w, req)
				return
			}
			i := pages.Add(1)
			w.Header().Set("ETag", fmt.Sprintf(`"%d"`, i))
			w.Header().Set("Link", fmt.Sprintf(`<%s?n=1&last=t%d>; rel="next"`, req.URL.Path, i))
			fmt.Fprintf(w, `{"name":"app","tags":["t%d"]%s}`, i, pad)
		})
	})
	c := NewClient()
	c.MaxTags = 10 // 66,856 bytes in all
	_, err := c.ListTags(ctx, r.host+"/app", Options{})
	want := fmt.Sprintf("list tags of %s/app: tag list response larger than 66856 bytes", r.host)
	if err == nil || err.Error() != want || KindOf(err) != KindTooManyTags {
		t.Errorf("%v\nwant %q", err, want)
	}
	if n := pages.Load(); n != 2 {
		t.Errorf("%d pages requested, want 2", n)
	}
}
