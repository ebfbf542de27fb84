package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func runBinary(t *testing.T) *testenv.Process {
	return runBinaryOn(t, t.TempDir())
}

func runBinaryOn(t *testing.T, storage string) *testenv.Process {
	return testenv.RunController(t, env, ControllerName, "--storage-path="+storage,
		"--min-retry-delay=200ms", "--max-retry-delay=2s", "--requeue-dependency=1s")
}

// TestBinaryScansOnceAndResolvesEveryPolicy: the built binary scans an
// in-process registry's repository once (one tags/list) for six policies,
// stores its tags as Flux does (revision sha256, signature tags excluded,
// the 10 latest in string order) and resolves semver (with and without
// pre-releases), alphabetical and numerical with extract, and a policy
// on `latest` that reflects its digest and is flagged mutable.
func TestBinaryScansOnceAndResolvesEveryPolicy(t *testing.T) {
	c := newClient(t)
	reg := testenv.NewRegistry(t)
	host := reg.Host()
	reg.Push(t, "app", "1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0", "sha256-abc.sig")
	latest := reg.Push(t, "app", "latest")
	reg.Push(t, "app", "main-ffaa001-1700000300", "main-0bc1234-1700000900", "main-9e8d7c6-1700000100")
	ns := testenv.NewNamespace(t, c, "irc")
	runBinary(t)

	ts := &imagev1.TagFilter{Pattern: `^main-[a-f0-9]+-(?P<ts>[0-9]+)$`, Extract: "$ts"}
	withFilter := func(f *imagev1.TagFilter) func(*imagev1.ImagePolicy) {
		return func(p *imagev1.ImagePolicy) { p.Spec.FilterTags = f }
	}
	policies := map[string]*imagev1.ImagePolicy{
		"1.1.0":                   imagePolicy(ns, "semver", "app", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "^1.x"}}),
		"1.2.0-rc.1":              imagePolicy(ns, "prerelease", "app", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=1.0.0-0 <2.0.0-0"}}),
		"main-0bc1234-1700000900": imagePolicy(ns, "alpha", "app", imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}}, withFilter(ts)),
		"main-9e8d7c6-1700000100": imagePolicy(ns, "numeric-desc", "app", imagev1.ImagePolicyChoice{Numerical: &imagev1.NumericalPolicy{Order: "desc"}}, withFilter(ts)),
		"latest": imagePolicy(ns, "latest", "app", imagev1.ImagePolicyChoice{Alphabetical: &imagev1.AlphabeticalPolicy{}},
			withFilter(&imagev1.TagFilter{Pattern: "^latest$"}), func(p *imagev1.ImagePolicy) { p.Spec.DigestReflectionPolicy = imagev1.ReflectIfNotPresent }),
	}
	none := imagePolicy(ns, "none", "app", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: ">=3.0.0"}})
	// Policies first: they wait for the repository (DependencyNotReady).
	for _, p := range policies {
		create(t, c, p)
	}
	create(t, c, none)
	repo := imageRepository(ns, "app", host+"/app")
	create(t, c, repo)

	testenv.WaitFor(t, c, repo, "Ready", func() bool { return isReady(repo) })
	res := repo.Status.LastScanResult
	wantLatest := []string{"main-ffaa001-1700000300", "main-9e8d7c6-1700000100", "main-0bc1234-1700000900", "latest", "2.0.0", "1.2.0-rc.1", "1.1.0", "1.0.0"}
	if res == nil || res.TagCount != 8 || !slices.Equal(res.LatestTags, wantLatest) || !strings.HasPrefix(res.Revision, "sha256:") {
		t.Errorf("lastScanResult %+v", res)
	}
	if repo.Status.CanonicalImageName != host+"/app" || !slices.Equal(repo.Status.ObservedExclusionList, []string{`^.*\.sig$`}) {
		t.Errorf("status %+v", repo.Status)
	}
	if want := fmt.Sprintf("successful scan: found 8 tags with checksum %s", res.Revision); ready(repo).Message != want {
		t.Errorf("Ready message %q, want %q", ready(repo).Message, want)
	}
	for tag, p := range policies {
		testenv.WaitFor(t, c, p, "Ready", func() bool { return isReady(p) })
		if p.Status.LatestRef == nil || p.Status.LatestRef.Tag != tag || p.Status.LatestRef.Name != host+"/app" {
			t.Errorf("%s: latestRef %+v, want tag %s", p.Name, p.Status.LatestRef, tag)
		}
	}
	lp := policies["latest"]
	if lp.Status.LatestRef.Digest != latest.String() {
		t.Errorf("latest digest %q, want %s", lp.Status.LatestRef.Digest, latest)
	}
	if want := fmt.Sprintf("Latest image tag for %s/app resolved to latest with digest %s", host, latest); ready(lp).Message != want {
		t.Errorf("Ready message %q, want %q", ready(lp).Message, want)
	}
	if m := apimeta.FindStatusCondition(lp.Status.Conditions, MutableTagCondition); m == nil || m.Status != metav1.ConditionTrue || m.Reason != MutableTagReason {
		t.Errorf("MutableTag condition %+v", m)
	}
	if apimeta.FindStatusCondition(policies["1.1.0"].Status.Conditions, MutableTagCondition) != nil {
		t.Error("a version tag is flagged mutable")
	}
	testenv.WaitFor(t, c, none, "Failure", failedWith(none, FailureReason, "unable to determine latest version from provided list"))
	if n := reg.Requests(testenv.RegistryTagsList); n != 1 {
		t.Errorf("%d tags/list requests for one repository and 6 policies, want 1", n)
	}
}

// TestBinaryReflectsARepushedDigest: a policy with digestReflectionPolicy
// Always follows a tag re-pushed with a new image, keeping the previous
// reference in observedPreviousRef and the Ready message.
func TestBinaryReflectsARepushedDigest(t *testing.T) {
	c := newClient(t)
	reg := testenv.NewRegistry(t)
	host := reg.Host()
	first := reg.Push(t, "app", "1.0.0")
	ns := testenv.NewNamespace(t, c, "irc")
	runBinary(t)
	p := imagePolicy(ns, "pinned", "app", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "1.x"}},
		func(p *imagev1.ImagePolicy) {
			p.Spec.DigestReflectionPolicy = imagev1.ReflectAlways
			p.Spec.Interval = &metav1.Duration{Duration: time.Second}
		})
	create(t, c, imageRepository(ns, "app", host+"/app"), p)
	testenv.WaitFor(t, c, p, "first digest", func() bool { return isReady(p) && p.Status.LatestRef.Digest == first.String() })
	second := reg.Push(t, "app", "1.0.0")
	testenv.WaitFor(t, c, p, "second digest", func() bool { return isReady(p) && p.Status.LatestRef.Digest == second.String() })
	if prev := p.Status.ObservedPreviousRef; prev == nil || prev.Digest != first.String() {
		t.Errorf("observedPreviousRef %+v", prev)
	}
	want := fmt.Sprintf("Latest image tag for %[1]s/app resolved to 1.0.0 with digest %[2]s (previously %[1]s/app:1.0.0@%[3]s)", host, second, first)
	if ready(p).Message != want {
		t.Errorf("Ready message %q\nwant %q", ready(p).Message, want)
	}
}

// TestBinaryAuthFailuresAreStableAndSecretFree: a registry demanding basic
// auth fails the scan with a stable message until the ImageRepository
// names a dockerconfigjson Secret; the password reaches no status.
func TestBinaryAuthFailuresAreStableAndSecretFree(t *testing.T) {
	c := newClient(t)
	reg := testenv.NewRegistry(t, testenv.WithBasicAuth("robot", "s3cret-pass"))
	host := reg.Host()
	reg.Push(t, "app", "1.0.0")
	ns := testenv.NewNamespace(t, c, "irc")
	runBinary(t)
	repo := imageRepository(ns, "app", host+"/app")
	create(t, c, repo)
	want := fmt.Sprintf("scan failed: list tags of %s/app: 401 Unauthorized (UNAUTHORIZED: authentication required)", host)
	testenv.WaitFor(t, c, repo, "401", failedWith(repo, imagev1.ReadOperationFailedReason, want))

	missing := imageRepository(ns, "missing-secret", host+"/app", func(r *imagev1.ImageRepository) { r.Spec.SecretRef = localRef("nope") })
	create(t, c, missing)
	testenv.WaitFor(t, c, missing, "missing secret", failedWith(missing, imagev1.AuthenticationFailedReason,
		fmt.Sprintf("failed to configure authentication options: getting secret '%s/nope': not found", ns)))

	cfg := fmt.Sprintf(`{"auths":{%q:{"username":"robot","password":"s3cret-pass"}}}`, host)
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}})
	patch := client.MergeFrom(repo.DeepCopy())
	repo.Spec.SecretRef = localRef("creds")
	if err := c.Patch(context.Background(), repo, patch); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, c, repo, "Ready", func() bool { return isReady(repo) })
	if repo.Status.LastScanResult.TagCount != 1 {
		t.Errorf("tags %+v", repo.Status.LastScanResult)
	}
}

// TestBinaryRateLimitedRegistryPausesEveryRepositoryOnIt: a registry
// answering 429 fails the scan of one repository with a stable message
// naming the back-off, and a second repository on the same registry fails
// the same way without a request; both scan once the back-off is over.
func TestBinaryRateLimitedRegistryPausesEveryRepositoryOnIt(t *testing.T) {
	c := newClient(t)
	reg := testenv.NewRegistry(t)
	host := reg.Host()
	reg.Push(t, "a", "1.0.0")
	reg.Push(t, "b", "1.0.0")
	ns := testenv.NewNamespace(t, c, "irc")
	runBinary(t)
	reg.FailWith(429)
	msg := func(repo string) string {
		return fmt.Sprintf("scan failed: list tags of %s/%s: registry %s answered 429 Too Many Requests: no request to it for 5s", host, repo, host)
	}
	a := imageRepository(ns, "a", host+"/a")
	create(t, c, a)
	testenv.WaitFor(t, c, a, "429", failedWith(a, imagev1.ReadOperationFailedReason, msg("a")))
	reg.FailWith(0)
	b := imageRepository(ns, "b", host+"/b")
	create(t, c, b)
	testenv.WaitFor(t, c, b, "back-off", failedWith(b, imagev1.ReadOperationFailedReason, msg("b")))
	if n := reg.Requests(testenv.RegistryTagsList); n != 1 {
		t.Errorf("%d tags/list requests during the back-off, want 1", n)
	}
	testenv.WaitFor(t, c, a, "Ready after the back-off", func() bool { return isReady(a) })
	testenv.WaitFor(t, c, b, "Ready after the back-off", func() bool { return isReady(b) })
}

// TestBinaryRestartReadsStoredTags: tags are stored on disk, so a
// restarted controller resolves a new policy from them without scanning
// the repository again before its interval.
func TestBinaryRestartReadsStoredTags(t *testing.T) {
	c := newClient(t)
	reg := testenv.NewRegistry(t)
	host := reg.Host()
	reg.Push(t, "app", "1.0.0", "1.1.0")
	ns := testenv.NewNamespace(t, c, "irc")
	storage := t.TempDir()
	p := runBinaryOn(t, storage)
	repo := imageRepository(ns, "app", host+"/app")
	create(t, c, repo)
	testenv.WaitFor(t, c, repo, "Ready", func() bool { return isReady(repo) })
	p.Stop()
	runBinaryOn(t, storage)
	pol := imagePolicy(ns, "after-restart", "app", imagev1.ImagePolicyChoice{SemVer: &imagev1.SemVerPolicy{Range: "1.x"}})
	create(t, c, pol)
	testenv.WaitFor(t, c, pol, "Ready", func() bool { return isReady(pol) && pol.Status.LatestRef.Tag == "1.1.0" })
	if n := reg.Requests(testenv.RegistryTagsList); n != 1 {
		t.Errorf("%d tags/list requests, want 1 (no scan after the restart)", n)
	}
}
