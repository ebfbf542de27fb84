package artifact

import (
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
)

func TestOwnerHoldsOnlyFilesOfItsOwnDirectory(t *testing.T) {
	o := Owner{Kind: "GitRepository", Namespace: "team-a", Name: "app"}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"gitrepository/team-a/app/0123abcd.tar.gz", true},
		{"gitrepository/team-a/app/latest.tar.gz", true},
		{"gitrepository/team-b/app/0123abcd.tar.gz", false},
		{"helmchart/team-b/chart/latest.tar.gz", false},
		{"gitrepository/team-a/app/../../team-b/app/x.tar.gz", false},
		{"gitrepository/team-a/app/sub/x.tar.gz", false},
		{"gitrepository/team-a/app/.x.tar.gz.tmp-1", false},
		{"/etc/passwd", false},
		{"../../etc/passwd", false},
		{"", false},
	} {
		if got := o.Holds(&meta.Artifact{Path: tc.path}); got != tc.want {
			t.Errorf("Holds(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if o.Holds(nil) {
		t.Error("Holds(nil) = true")
	}
}
