package builder

import (
	"fmt"
	"os"
	"strings"

	"github.com/eddyops/eddy/pkg/artifact"
)

// isTarball tells whether p names a .tar.gz or .tgz file (any case): what
// `flux build artifact` and `helm package` write.
func isTarball(p string) bool {
	l := strings.ToLower(p)
	return strings.HasSuffix(l, ".tar.gz") || strings.HasSuffix(l, ".tgz")
}

// extract unpacks the tarball src of the source into the destination,
// with pkg/artifact's checks and limits (no links, no path out of the
// destination, at most DefaultLimits).
func (j *copyJob) extract(src string) error {
	f, err := j.src.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := mkdirAll(j.dst, j.dest); err != nil {
		return err
	}
	dir := j.dst.Name()
	if j.dest != "" {
		dir += string(os.PathSeparator) + j.dest
	}
	// The destination was made through the root, so dir is inside it;
	// artifact.Extract opens its own root on dir for the writes.
	if err := artifact.Extract(f, dir, artifact.DefaultLimits); err != nil {
		return fmt.Errorf("extract '%s': %w", src, err)
	}
	return nil
}
