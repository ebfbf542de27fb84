package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// bucketProviders are the values of `create source bucket --provider`,
// flux's.
var bucketProviders = []string{sourcev1.BucketProviderGeneric, sourcev1.BucketProviderAmazon,
	sourcev1.BucketProviderAzure, sourcev1.BucketProviderGoogle}

// bucketProviderFlag is --provider of `create source bucket`: one of
// bucketProviders, refused at parse time as flux does.
type bucketProviderFlag string

func (p *bucketProviderFlag) String() string { return string(*p) }
func (p *bucketProviderFlag) Type() string   { return strings.Join(bucketProviders, "|") }
func (p *bucketProviderFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("no source bucket provider given, please specify the S3 compatible storage provider name")
	}
	if !slices.Contains(bucketProviders, s) {
		return fmt.Errorf("source bucket provider '%s' is not supported, must be one of: %s", s, strings.Join(bucketProviders, ", "))
	}
	*p = bucketProviderFlag(s)
	return nil
}

// newCreateSourceBucketCommand is `create source bucket`, with flux
// v2.9.5's flags, checks and output: without --secret-ref, --access-key
// and --secret-key go into the Secret bucket-<name> (not with --export,
// which prints the Bucket only, as flux does).
func newCreateSourceBucketCommand(g *globalFlags, f *createFlags) *cobra.Command {
	var bucketName, endpoint, accessKey, secretKey, region, secretRef, proxyRef string
	var ignorePaths []string
	var insecure bool
	provider := bucketProviderFlag(sourcev1.BucketProviderGeneric)
	cmd := &cobra.Command{
		Use:   "bucket [name]",
		Short: "Create or update a Bucket source",
		Long: "The create source bucket command generates a Bucket resource and waits for it to be downloaded. " +
			"For Buckets with static authentication, the credentials are stored in a Kubernetes secret.",
		Example: "  eddy create source bucket podinfo --bucket-name=podinfo --endpoint=minio.minio.svc.cluster.local:9000 " +
			"--insecure=true --access-key=myaccesskey --secret-key=mysecretkey --interval=10m\n" +
			"  eddy create source bucket podinfo --bucket-name=podinfo --provider=aws --endpoint=s3.amazonaws.com --region=us-east-1 --interval=10m",
		RunE: func(cmd *cobra.Command, args []string) error {
			om, err := f.meta(g, args)
			if err != nil {
				return err
			}
			switch {
			case bucketName == "":
				return errors.New("bucket-name is required")
			case endpoint == "":
				return errors.New("endpoint is required")
			}
			b := &sourcev1.Bucket{ObjectMeta: om, Spec: sourcev1.BucketSpec{
				BucketName: bucketName, Provider: provider.String(), Insecure: insecure, Endpoint: endpoint, Region: region,
				Interval: metav1.Duration{Duration: f.interval}, Ignore: ignoreOf(ignorePaths), Timeout: f.timeout(),
			}}
			if secretRef != "" {
				b.Spec.SecretRef = &meta.LocalObjectReference{Name: secretRef}
			}
			if proxyRef != "" {
				b.Spec.ProxySecretRef = &meta.LocalObjectReference{Name: proxyRef}
			}
			c := creation{obj: b, kind: "Bucket source", created: "Bucket source", completed: "Bucket source reconciliation completed",
				done: sourceDone(sourcev1.BucketKind, b)}
			if secretRef == "" && accessKey != "" && secretKey != "" {
				c.prepare = func(ctx context.Context, cl client.Client, u *ui.UI) error {
					s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bucket-" + om.Name, Namespace: om.Namespace, Labels: om.Labels},
						StringData: map[string]string{"accesskey": accessKey, "secretkey": secretKey}}
					u.Action("applying secret with the bucket credentials")
					if err := upsertSecret(ctx, cl, s); err != nil {
						return err
					}
					b.Spec.SecretRef = &meta.LocalObjectReference{Name: s.Name}
					u.Success("authentication configured")
					return nil
				}
			}
			return g.create(cmd, f, c)
		},
	}
	fs := cmd.Flags()
	fs.Var(&provider, "provider", "the S3 compatible storage provider name")
	fs.StringVar(&bucketName, "bucket-name", "", "the bucket name")
	fs.StringVar(&endpoint, "endpoint", "", "the bucket endpoint address")
	fs.StringVar(&accessKey, "access-key", "", "the bucket access key")
	fs.StringVar(&secretKey, "secret-key", "", "the bucket secret key")
	fs.StringVar(&region, "region", "", "the bucket region")
	fs.BoolVar(&insecure, "insecure", false, "for when connecting to a non-TLS S3 HTTP endpoint")
	fs.StringVar(&secretRef, "secret-ref", "", "the name of an existing secret containing credentials")
	fs.StringVar(&proxyRef, "proxy-secret-ref", "", "the name of an existing secret containing the proxy address and credentials")
	fs.StringSliceVar(&ignorePaths, "ignore-paths", nil, "set paths to ignore in bucket resource (can specify multiple paths with commas: path1,path2)")
	return cmd
}

// upsertSecret creates s, or replaces the labels and data of the Secret of
// its name. Flux compatible (upsertSecret).
func upsertSecret(ctx context.Context, cl client.Client, s *corev1.Secret) error {
	cur := &corev1.Secret{}
	switch err := cl.Get(ctx, client.ObjectKeyFromObject(s), cur); {
	case apierrors.IsNotFound(err):
		return cl.Create(ctx, s)
	case err != nil:
		return err
	}
	cur.Labels, cur.StringData, cur.Data = s.Labels, s.StringData, nil
	return cl.Update(ctx, cur)
}
