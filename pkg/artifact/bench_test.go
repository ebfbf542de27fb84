package artifact_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/gitserver"
)

// generateRepo writes about 50 MB in 20,000 YAML-like files (deterministic
// content, compressible like real manifests) and commits them.
func generateRepo(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("apiVersion kind metadata name namespace labels spec replicas template containers image ports resources limits requests memory cpu env value")
	for i := range 20_000 {
		var sb strings.Builder
		for sb.Len() < 2500 {
			fmt.Fprintf(&sb, "%s: %s-%d\n", words[rng.IntN(len(words))], words[rng.IntN(len(words))], rng.IntN(100000))
		}
		p := filepath.Join(dir, fmt.Sprintf("apps/team-%02d/app-%03d/manifest-%d.yaml", i%50, (i/50)%40, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "generated"}} {
		if _, err := gitserver.Git(dir, args...); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkArchiveVsGitArchive measures WriteArchive plus the sha256 digest
// on a 50 MB / 20k-file tree, and as the baseline in the same run
// `git archive --format=tar HEAD | gzip` on the same commit. It reports the
// ratio ours/git (below 1 is faster than git).
func BenchmarkArchiveVsGitArchive(b *testing.B) {
	dir := generateRepo(b)
	ign, err := artifact.LoadIgnore(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	var ours, git time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := artifact.WriteArchive(sha256.New(), dir, ign); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)

		start = time.Now()
		cmd := exec.Command("sh", "-c", "git archive --format=tar HEAD | gzip > /dev/null")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git archive: %v: %s", err, out)
		}
		git += time.Since(start)
	}
	b.StopTimer()
	// The archive is deterministic: its size once, outside the timing.
	var archive bytes.Buffer
	if err := artifact.WriteArchive(&archive, dir, ign); err != nil {
		b.Fatal(err)
	}
	size := int64(archive.Len())
	n := float64(b.N)
	b.ReportMetric(ours.Seconds()/n, "eddy-s/op")
	b.ReportMetric(git.Seconds()/n, "git-archive-gzip-s/op")
	b.ReportMetric(ours.Seconds()/git.Seconds(), "ratio-eddy/git")
	b.ReportMetric(50/(ours.Seconds()/n), "eddy-MB/s")
	b.ReportMetric(float64(size)/1e6, "archive-MB")
}
