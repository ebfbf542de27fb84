package main

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"strings"
	"time"
	"unicode"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// newCreateImageCommand is flux's `create image`: the image automation
// objects (ImageRepository, ImagePolicy, ImageUpdateAutomation).
func newCreateImageCommand(g *globalFlags, f *createFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Create or update image automation objects",
		Long: "The create image subcommands make the objects of image automation: an ImageRepository scans a registry's " +
			"tags, an ImagePolicy selects the latest of them, an ImageUpdateAutomation commits the selection to Git.",
	}
	cmd.AddCommand(newCreateImageRepositoryCommand(g, f), newCreateImagePolicyCommand(g, f), newCreateImageUpdateCommand(g, f))
	unknownKind(cmd)
	return cmd
}

// imageCreation is the creation of an image automation object of kind,
// with flux's lines ("<Kind> created", "<Kind> reconciliation completed").
func imageCreation(obj client.Object, kind string) creation {
	return creation{obj: obj, kind: kind, created: kind, completed: kind + " reconciliation completed"}
}

func newCreateImageRepositoryCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var image, secretRef, certRef string
	var scanTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "repository [name]",
		Short: "Create or update an ImageRepository object",
		Long:  "Create an ImageRepository: image-reflector-controller scans the tags of --image every --interval.",
		Example: "  eddy create image repository podinfo --image=ghcr.io/stefanprodan/podinfo --interval=1m\n" +
			"  eddy create image repository app --image=registry.example.com/app --secret-ref=regcred --export",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			if image == "" {
				return errors.New("an image repository (--image) is required")
			}
			if _, err := name.NewRepository(image); err != nil {
				return fmt.Errorf("unable to parse image value: %w", err)
			}
			repo := &imagev1.ImageRepository{ObjectMeta: om, Spec: imagev1.ImageRepositorySpec{
				Image: image, Interval: metav1.Duration{Duration: f.interval},
			}}
			if scanTimeout != 0 {
				repo.Spec.Timeout = &metav1.Duration{Duration: scanTimeout}
			}
			if secretRef != "" {
				repo.Spec.SecretRef = &meta.LocalObjectReference{Name: secretRef}
			}
			if certRef != "" {
				repo.Spec.CertSecretRef = &meta.LocalObjectReference{Name: certRef}
			}
			return g.create(cmd, f, imageCreation(repo, imagev1.ImageRepositoryKind))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&image, "image", "", "the image repository to scan; e.g., library/alpine")
	fs.StringVar(&secretRef, "secret-ref", "", "the name of a docker-registry secret to use for credentials")
	fs.StringVar(&certRef, "cert-ref", "", "the name of a secret to use for TLS certificates")
	fs.DurationVar(&scanTimeout, "scan-timeout", 0, "a timeout for scanning; this defaults to the interval if not set")
	return cmd
}

// imagePolicyFlags are the flags of `create image policy`.
type imagePolicyFlags struct {
	imageRef, semver, alpha, numeric, filterRegex, filterExtract, reflectDigest string
	interval                                                                    time.Duration
}

func newCreateImagePolicyCommand(g *globalFlags, f *createFlags) *cobra.Command {
	p := &imagePolicyFlags{}
	cmd := &cobra.Command{
		Use:   "policy [name]",
		Short: "Create or update an ImagePolicy object",
		Long: "Create an ImagePolicy: image-reflector-controller selects the latest tag of --image-ref's scan by one of --select-semver, --select-alpha or --select-numeric. " +
			"With --reflect-digest=IfNotPresent it also records the tag's digest, so that the automation pins images by digest " +
			"(a marked `image: name:tag@digest` is rewritten with both): a re-pushed tag then cannot change what runs.",
		Example: "  eddy create image policy podinfo --image-ref=podinfo --select-semver='>=6.0.0' --reflect-digest=IfNotPresent\n" +
			"  eddy create image policy app --image-ref=app --select-numeric=asc --filter-regex='^main-[a-f0-9]+-(?P<ts>[0-9]+)' --filter-extract='$ts' --reflect-digest=IfNotPresent",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			spec, err := p.spec()
			if err != nil {
				return err
			}
			return g.create(cmd, f, imageCreation(&imagev1.ImagePolicy{ObjectMeta: om, Spec: spec}, imagev1.ImagePolicyKind))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&p.imageRef, "image-ref", "", "the name of an image repository object")
	fs.StringVar(&p.semver, "select-semver", "", "a semver range to apply to tags; e.g., '1.x'")
	fs.StringVar(&p.alpha, "select-alpha", "", `use alphabetical sorting to select image; either "asc" meaning select the last, or "desc" meaning select the first`)
	fs.StringVar(&p.numeric, "select-numeric", "", `use numeric sorting to select image; either "asc" meaning select the last, or "desc" meaning select the first`)
	fs.StringVar(&p.filterRegex, "filter-regex", "", "regular expression pattern used to filter the image tags")
	fs.StringVar(&p.filterExtract, "filter-extract", "", "replacement pattern (using capture groups from --filter-regex) to use for sorting")
	fs.StringVar(&p.reflectDigest, "reflect-digest", "", "the digest reflection policy to use when observing latest image tags (one of 'Never', 'IfNotPresent', 'Always')")
	// Shadows create's --interval: a policy has an interval only with Always.
	fs.DurationVar(&p.interval, "interval", 0, "the interval at which to check for new image digests when the policy is set to 'Always'")
	return cmd
}

// spec is the ImagePolicy of the flags, or flux's message for the first
// flag in error. Two --select flags are an error (flux 2.9 leaves the
// policy empty for some pairs).
func (p *imagePolicyFlags) spec() (imagev1.ImagePolicySpec, error) {
	spec := imagev1.ImagePolicySpec{ImageRepositoryRef: meta.NamespacedObjectReference{Name: p.imageRef}}
	if p.imageRef == "" {
		return spec, errors.New("the name of an ImageRepository in the namespace is required (--image-ref)")
	}
	var selects int
	for _, s := range []string{p.semver, p.alpha, p.numeric} {
		if s != "" {
			selects++
		}
	}
	orders := []string{imagev1.OrderAsc, imagev1.OrderDesc}
	switch {
	case selects > 1:
		return spec, errors.New("only one of --select-semver, --select-alpha or --select-numeric can be specified")
	case p.semver != "":
		spec.Policy.SemVer = &imagev1.SemVerPolicy{Range: p.semver}
	case p.alpha != "":
		if !slices.Contains(orders, p.alpha) {
			return spec, errors.New(`--select-alpha must be one of ["asc", "desc"]`)
		}
		spec.Policy.Alphabetical = &imagev1.AlphabeticalPolicy{Order: p.alpha}
	case p.numeric != "":
		if !slices.Contains(orders, p.numeric) {
			return spec, errors.New(`--select-numeric must be one of ["asc", "desc"]`)
		}
		spec.Policy.Numerical = &imagev1.NumericalPolicy{Order: p.numeric}
	default:
		return spec, errors.New("a policy must be provided with either --select-semver or --select-alpha")
	}
	switch {
	case p.filterRegex != "":
		re, err := syntax.Parse(p.filterRegex, syntax.Perl)
		if err != nil {
			return spec, errors.New("--filter-regex is an invalid regex pattern")
		}
		if err := checkExtract(p.filterExtract, re.CapNames()); err != nil {
			return spec, err
		}
		spec.FilterTags = &imagev1.TagFilter{Pattern: p.filterRegex, Extract: p.filterExtract}
	case p.filterExtract != "":
		return spec, errors.New("cannot specify --filter-extract without specifying --filter-regex")
	}
	if r := imagev1.ReflectionPolicy(p.reflectDigest); r != "" {
		if !slices.Contains([]imagev1.ReflectionPolicy{imagev1.ReflectNever, imagev1.ReflectIfNotPresent, imagev1.ReflectAlways}, r) {
			return spec, errors.New("invalid value for --reflect-digest, must be one of 'Never', 'IfNotPresent', 'Always'")
		}
		spec.DigestReflectionPolicy = r
	}
	if p.interval != 0 {
		if spec.DigestReflectionPolicy != imagev1.ReflectAlways {
			return spec, errors.New("the --interval flag can only be used with the 'Always' digest reflection policy, use --reflect-digest=Always")
		}
		spec.Interval = &metav1.Duration{Duration: p.interval}
	}
	return spec, nil
}

// checkExtract checks that each named reference ($name, ${name}) of the
// --filter-extract template (Go's regexp.Expand syntax) is a capture group
// of --filter-regex; numbered references are not checked ("$$" is a
// literal "$").
func checkExtract(template string, capNames []string) error {
	for {
		i := strings.IndexByte(template, '$')
		if i < 0 {
			return nil
		}
		template = template[i+1:]
		if strings.HasPrefix(template, "$") {
			template = template[1:]
			continue
		}
		braced := strings.HasPrefix(template, "{")
		if braced {
			template = template[1:]
		}
		end := strings.IndexFunc(template, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
		if end < 0 {
			end = len(template)
		}
		ref := template[:end]
		if ref == "" || braced && !strings.HasPrefix(template[end:], "}") {
			return errors.New("--filter-extract is malformed")
		}
		template = strings.TrimPrefix(template[end:], "}")
		if isNumber(ref) {
			continue
		}
		if !slices.Contains(capNames, ref) {
			return fmt.Errorf("capture group $%s used in --filter-extract not found in --filter-regex", ref)
		}
	}
}

// isNumber is regexp.Expand's rule for a numbered reference: digits, no
// leading zero.
func isNumber(s string) bool {
	if len(s) > 1 && s[0] == '0' || len(s) > 8 {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}

// imageUpdateFlags are the flags of `create image update`.
type imageUpdateFlags struct {
	gitRepoRef, gitRepoNamespace, gitRepoPath, checkoutBranch, pushBranch string
	commitTemplate, authorName, authorEmail, signingKeySecret, signingKey string
}

func newCreateImageUpdateCommand(g *globalFlags, f *createFlags) *cobra.Command {
	u := &imageUpdateFlags{}
	cmd := &cobra.Command{
		Use:   "update [name]",
		Short: "Create or update an ImageUpdateAutomation object",
		Long: "Create an ImageUpdateAutomation: image-automation-controller writes the latest images of the ImagePolicies " +
			"into the files of --git-repo-path (at their setter markers), commits as --author-name and pushes. " +
			"Pin by digest: mark `image: ghcr.io/org/app:1.2.3@sha256:… # {\"$imagepolicy\": \"flux-system:app\"}` " +
			"(or a kustomize images entry's newTag and digest with the :tag and :digest markers) and create the policies with --reflect-digest=IfNotPresent.",
		Example: "  eddy create image update flux-system --git-repo-ref=flux-system --git-repo-path=./clusters/my-cluster \\\n" +
			"    --checkout-branch=main --push-branch=image-updates --author-name=eddybot --author-email=eddybot@example.com",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			spec, err := u.spec(f.interval)
			if err != nil {
				return err
			}
			return g.create(cmd, f, imageCreation(&imagev1.ImageUpdateAutomation{ObjectMeta: om, Spec: spec}, imagev1.ImageUpdateAutomationKind))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&u.gitRepoRef, "git-repo-ref", "", "the name of a GitRepository resource with details of the upstream Git repository")
	fs.StringVar(&u.gitRepoNamespace, "git-repo-namespace", "", "the namespace of the GitRepository resource, defaults to the ImageUpdateAutomation namespace")
	fs.StringVar(&u.gitRepoPath, "git-repo-path", "", "path to the directory containing the manifests to be updated, defaults to the repository root")
	fs.StringVar(&u.checkoutBranch, "checkout-branch", "", "the branch to checkout")
	fs.StringVar(&u.pushBranch, "push-branch", "", "the branch to push commits to, defaults to the checkout branch if not specified")
	fs.StringVar(&u.commitTemplate, "commit-template", "", "a template for commit messages")
	fs.StringVar(&u.authorName, "author-name", "", "the name to use for commit author")
	fs.StringVar(&u.authorEmail, "author-email", "", "the email to use for commit author")
	fs.StringVar(&u.signingKeySecret, "signing-key-secret", "", "name of the Secret containing the signing key referenced in spec.git.commit.signingKey")
	fs.StringVar(&u.signingKey, "signing-key-type", "", "signing-key format: gpg or ssh (defaults to gpg when --signing-key-secret is set)")
	return cmd
}

// spec is the ImageUpdateAutomation of the flags (interval: create's
// --interval), or flux's message for the first flag missing or in error.
func (u *imageUpdateFlags) spec(interval time.Duration) (imagev1.ImageUpdateAutomationSpec, error) {
	for _, req := range []struct{ value, msg string }{
		{u.gitRepoRef, "a reference to a GitRepository is required (--git-repo-ref)"},
		{u.checkoutBranch, "the Git repository branch is required (--checkout-branch)"},
		{u.authorName, "the author name is required (--author-name)"},
		{u.authorEmail, "the author email is required (--author-email)"},
	} {
		if req.value == "" {
			return imagev1.ImageUpdateAutomationSpec{}, errors.New(req.msg)
		}
	}
	keyType := imagev1.SigningKeyType(u.signingKey)
	switch {
	case keyType != "" && u.signingKeySecret == "":
		return imagev1.ImageUpdateAutomationSpec{}, errors.New("--signing-key-type requires --signing-key-secret")
	case keyType != "" && keyType != imagev1.SigningKeyTypeGPG && keyType != imagev1.SigningKeyTypeSSH:
		return imagev1.ImageUpdateAutomationSpec{}, errors.New("--signing-key-type must be one of: gpg, ssh")
	}
	git := &imagev1.GitSpec{
		Checkout: &imagev1.GitCheckoutSpec{Reference: sourcev1.GitRepositoryRef{Branch: u.checkoutBranch}},
		Commit: imagev1.CommitSpec{Author: imagev1.CommitUser{Name: u.authorName, Email: u.authorEmail},
			MessageTemplate: u.commitTemplate},
	}
	if u.pushBranch != "" {
		git.Push = &imagev1.PushSpec{Branch: u.pushBranch}
	}
	if u.signingKeySecret != "" {
		git.Commit.SigningKey = &imagev1.SigningKey{SecretRef: meta.LocalObjectReference{Name: u.signingKeySecret}, Type: keyType}
	}
	spec := imagev1.ImageUpdateAutomationSpec{
		SourceRef: imagev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: u.gitRepoRef, Namespace: u.gitRepoNamespace},
		GitSpec:   git, Interval: metav1.Duration{Duration: interval},
	}
	if u.gitRepoPath != "" {
		spec.Update = &imagev1.UpdateStrategy{Path: u.gitRepoPath, Strategy: imagev1.UpdateStrategySetters}
	}
	return spec, nil
}

// imageCRDHint is the line added to an error saying the cluster serves no
// image.toolkit.fluxcd.io kinds: how to install them with eddy install, or
// have eddy dev start the image controllers.
const imageCRDHint = "hint: the image automation CRDs are not installed: eddy install --components-extra " +
	"image-reflector-controller,image-automation-controller; with eddy dev, commit objects of these kinds to the synced repository, " +
	"then run `eddy dev down`, then `eddy dev up`"

// withCRDHint returns err with imageCRDHint on a line of its own when err
// says the cluster serves no kinds of group image.toolkit.fluxcd.io (the
// API server's text kept, as flux prints it); else err.
func withCRDHint(err error, group string) error {
	if group != imagev1.GroupVersion.Group || !(apimeta.IsNoMatchError(err) || strings.Contains(err.Error(), "no matches for")) {
		return err
	}
	return fmt.Errorf("%w\n%s", err, imageCRDHint)
}
