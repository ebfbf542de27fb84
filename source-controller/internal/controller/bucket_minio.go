package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/cloudauth"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"
	corev1 "k8s.io/api/core/v1"
)

// This file holds the S3 client of the generic and aws providers
// (minio-go, as Flux), and the credentials a Bucket's Secrets give it.

// bucketCredentials are what a Bucket's Secrets configure: spec.secretRef,
// spec.sts.secretRef, spec.certSecretRef, spec.sts.certSecretRef and
// spec.proxySecretRef (each nil when not named).
type bucketCredentials struct {
	secret    *corev1.Secret
	stsSecret *corev1.Secret
	tls       *tls.Config
	stsTLS    *tls.Config
	proxy     *url.URL
}

// validateS3Secret checks spec.secretRef's keys. Flux compatible: both
// `accesskey` and `secretkey` are required (one of them may be empty, then
// the requests are anonymous).
func validateS3Secret(s *corev1.Secret) error {
	if s == nil {
		return nil
	}
	_, ak := s.Data["accesskey"]
	_, sk := s.Data["secretkey"]
	if !ak || !sk {
		return fmt.Errorf("invalid '%s' secret data: required fields 'accesskey' and 'secretkey'", s.Name)
	}
	return nil
}

// validateSTS checks spec.sts against spec.provider (the CRD's rules, for
// an object written before them). Flux compatible (ValidateSTSProvider).
func validateSTS(provider string, sts *sourcev1.BucketSTSSpec) error {
	incompatible := fmt.Errorf("STS provider '%s' is not supported for '%s' bucket provider", sts.Provider, provider)
	switch provider {
	case sourcev1.BucketProviderAmazon:
		switch {
		case sts.Provider != sourcev1.STSProviderAmazon:
			return incompatible
		case sts.SecretRef != nil:
			return fmt.Errorf("spec.sts.secretRef is not required for the '%s' STS provider", sts.Provider)
		case sts.CertSecretRef != nil:
			return fmt.Errorf("spec.sts.certSecretRef is not required for the '%s' STS provider", sts.Provider)
		}
		return nil
	case sourcev1.BucketProviderGeneric:
		if sts.Provider != sourcev1.STSProviderLDAP {
			return incompatible
		}
		return nil
	}
	return fmt.Errorf("STS configuration is not supported for '%s' bucket provider", provider)
}

// validateLDAPSecret checks spec.sts.secretRef of the ldap STS provider.
// Flux compatible.
func validateLDAPSecret(s *corev1.Secret) error {
	if s == nil {
		return nil
	}
	if len(s.Data["username"]) == 0 || len(s.Data["password"]) == 0 {
		return fmt.Errorf("invalid '%s' secret data for '%s' STS provider: required fields username, password", s.Name, sourcev1.STSProviderLDAP)
	}
	return nil
}

// minioBucket is the bucketClient of the generic and aws providers.
type minioBucket struct {
	c *minio.Client
}

// newMinioBucket returns the S3 client of obj: spec.endpoint, spec.region,
// TLS unless spec.insecure. Credentials: spec.secretRef's static keys;
// else, for aws with spec.sts (aws), the controller's AWS identity with
// its STS calls at spec.sts.endpoint (the AWS SDK's chain, as Flux);
// else, for aws, the environment's AWS credentials (variables, shared
// files, then the instance or pod role: minio-go's chain, where Flux uses
// the AWS SDK's); else, for generic with spec.sts (ldap), the STS's
// temporary ones; else anonymous. Flux compatible (minio.NewClient).
func newMinioBucket(ctx context.Context, obj *sourcev1.Bucket, creds *bucketCredentials) (*minioBucket, error) {
	opts := &minio.Options{Region: obj.Spec.Region, Secure: !obj.Spec.Insecure}
	sts := obj.Spec.STS
	switch {
	case creds.secret != nil:
		ak, sk := string(creds.secret.Data["accesskey"]), string(creds.secret.Data["secretkey"])
		if ak != "" && sk != "" {
			opts.Creds = credentials.NewStaticV4(ak, sk, "")
		}
	case obj.Spec.Provider == sourcev1.BucketProviderAmazon && sts != nil && sts.Provider == sourcev1.STSProviderAmazon:
		hc, err := cloudauth.HTTPClient(nil, creds.proxy)
		if err != nil {
			return nil, err
		}
		k, err := cloudauth.AWSCredentials(ctx, obj.Spec.Region, sts.Endpoint, hc)
		if err != nil {
			return nil, fmt.Errorf("AWS authentication failed: %w", err)
		}
		opts.Creds = credentials.NewStaticV4(k.AccessKeyID, k.SecretAccessKey, k.SessionToken)
	case obj.Spec.Provider == sourcev1.BucketProviderAmazon:
		opts.Creds = credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{},
			&credentials.FileAWSCredentials{}, &credentials.IAM{}})
	case sts != nil && sts.Provider == sourcev1.STSProviderLDAP:
		opts.Creds = ldapCredentials(sts.Endpoint, creds)
	}
	if opts.Creds == nil {
		opts.Creds = credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	if (opts.Secure && creds.tls != nil) || creds.proxy != nil {
		t, err := minio.DefaultTransport(opts.Secure)
		if err != nil {
			return nil, fmt.Errorf("failed to create default minio transport: %w", err)
		}
		if opts.Secure && creds.tls != nil {
			t.TLSClientConfig = creds.tls.Clone()
		}
		if creds.proxy != nil {
			t.Proxy = http.ProxyURL(creds.proxy)
		}
		opts.Transport = t
	}
	c, err := minio.New(obj.Spec.Endpoint, opts)
	if err != nil {
		return nil, err
	}
	return &minioBucket{c: c}, nil
}

// ldapCredentials are the temporary credentials MinIO's STS gives for the
// LDAP user of spec.sts.secretRef, over spec.sts.certSecretRef's TLS and
// the proxy.
func ldapCredentials(endpoint string, creds *bucketCredentials) *credentials.Credentials {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if creds.proxy != nil {
		t.Proxy = http.ProxyURL(creds.proxy)
	}
	if creds.stsTLS != nil {
		t.TLSClientConfig = creds.stsTLS.Clone()
	}
	var user, password string
	if creds.stsSecret != nil {
		user, password = string(creds.stsSecret.Data["username"]), string(creds.stsSecret.Data["password"])
	}
	return credentials.New(&credentials.LDAPIdentity{Client: &http.Client{Transport: t}, STSEndpoint: endpoint,
		LDAPUsername: user, LDAPPassword: password})
}

func (m *minioBucket) exists(ctx context.Context, bucket string) (bool, error) {
	return m.c.BucketExists(ctx, bucket)
}

// visit lists recursively; Google's S3 endpoint takes the V1 listing only.
func (m *minioBucket) visit(ctx context.Context, bucket, prefix string, fn func(key, etag string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing when fn fails
	for o := range m.c.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true, Prefix: prefix,
		UseV1: s3utils.IsGoogleEndpoint(*m.c.EndpointURL())}) {
		if o.Err != nil {
			return o.Err
		}
		if err := fn(o.Key, o.ETag); err != nil {
			return err
		}
	}
	return nil
}

// get reads the object with one GET: its etag is the response's.
func (m *minioBucket) get(ctx context.Context, bucket, key string, w io.Writer) (string, error) {
	o, err := m.c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return "", err
	}
	defer o.Close()
	st, err := o.Stat()
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(w, o); err != nil {
		return "", err
	}
	return strings.Trim(st.ETag, `"`), nil
}

func (m *minioBucket) notFound(err error) bool {
	var resp minio.ErrorResponse
	return errors.As(err, &resp) && resp.Code == "NoSuchKey"
}
