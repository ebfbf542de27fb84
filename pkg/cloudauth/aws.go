package cloudauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
)

// ecrPattern is ECR's registry host, `<account>.dkr.ecr.<region>.<domain>`
// (FIPS and the partitions' domains too), as Flux matches it.
const ecrPattern = `([0-9+]*).dkr[.-]ecr(?:-fips)?\.([^/.]*)\.(amazonaws\.com[.cn]*|amazonaws\.eu|sc2s\.sgov\.gov|c2s\.ic\.gov|cloud\.adc-e\.uk|csp\.hci\.ic\.gov|on\.aws)`

var ecrRegex = regexp.MustCompile(ecrPattern)

// ParseECRHost returns the region of an ECR registry host, or Flux's
// error for another host.
func ParseECRHost(host string) (string, error) {
	// Flux's pattern is unanchored: the whole host must match here, so
	// `<ecr host>.attacker.example` is not taken for ECR.
	parts := ecrRegex.FindStringSubmatch(host)
	if len(parts) < 3 || parts[0] != host {
		return "", fmt.Errorf("invalid AWS registry: '%s'. must match %s", host, ecrPattern)
	}
	return parts[2], nil
}

// ecrCredentials calls ECR's GetAuthorizationToken in region with the
// default credential chain (environment, web identity token file as IRSA
// and EKS Pod Identity set it, shared files, container and instance
// metadata). The SDK's own endpoint settings apply, AWS_ENDPOINT_URL_ECR
// and AWS_ENDPOINT_URL_STS among them.
func ecrCredentials(ctx context.Context, region string, hc *http.Client) (Credentials, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region), config.WithHTTPClient(awsHTTPClient(hc)))
	if err != nil {
		return Credentials{}, fmt.Errorf("failed to load the AWS configuration: %w", err)
	}
	// Retrieved first for Flux's two messages: the identity, then ECR.
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return Credentials{}, fmt.Errorf("failed to get access token for artifact registry: %w", err)
	}
	out, err := ecr.NewFromConfig(cfg).GetAuthorizationToken(ctx, &ecr.GetAuthorizationTokenInput{})
	if err != nil {
		return Credentials{}, fmt.Errorf("failed to create artifact registry credentials: %w", err)
	}
	if len(out.AuthorizationData) == 0 {
		return Credentials{}, errors.New("no authorization data returned")
	}
	data := out.AuthorizationData[0]
	if data.AuthorizationToken == nil {
		return Credentials{}, errors.New("authorization token is nil")
	}
	if data.ExpiresAt == nil {
		return Credentials{}, errors.New("authorization token expiration is nil")
	}
	b, err := base64.StdEncoding.DecodeString(aws.ToString(data.AuthorizationToken))
	if err != nil {
		return Credentials{}, errors.New("failed to parse authorization token: not base64")
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok {
		return Credentials{}, errors.New("invalid authorization token format")
	}
	return Credentials{Username: user, Password: pass, ExpiresAt: *data.ExpiresAt}, nil
}

// awsHTTPClient is hc's proxy and TLS settings in a client the SDK can
// still add AWS_CA_BUNDLE to.
func awsHTTPClient(hc *http.Client) *awshttp.BuildableClient {
	src, _ := hc.Transport.(*http.Transport)
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		if src == nil {
			return
		}
		t.Proxy = src.Proxy
		if src.TLSClientConfig != nil {
			t.TLSClientConfig = src.TLSClientConfig.Clone()
		}
	})
}

// awsSTSEndpointPattern is the STS endpoints Flux accepts in a Bucket's
// spec.sts.endpoint: AWS's own, so that no object can send the
// controller's web identity token elsewhere.
const awsSTSEndpointPattern = `^https://(.+\.)?sts(-fips)?(\.[^.]+)?(\.vpce)?\.amazonaws\.com$`

var awsSTSEndpointRegex = regexp.MustCompile(awsSTSEndpointPattern)

// AWSKeys are temporary AWS credentials.
type AWSKeys struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// AWSCredentials returns the credentials of the controller's AWS identity
// (the SDK's default chain: environment, web identity token file as IRSA
// sets it, shared files, container and instance metadata) in region, the
// STS calls at stsEndpoint when set. Flux compatible (its controller-level
// AWS credentials): the region defaults to AWS_REGION, the endpoint must
// be one of AWS's, and the messages.
func AWSCredentials(ctx context.Context, region, stsEndpoint string, hc *http.Client) (AWSKeys, error) {
	if region == "" {
		if region = os.Getenv("AWS_REGION"); region == "" {
			return AWSKeys{}, errors.New("AWS_REGION environment variable is not set in the controller: set it, or set spec.region")
		}
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(region), config.WithHTTPClient(awsHTTPClient(hc))}
	if stsEndpoint != "" {
		if !awsSTSEndpointRegex.MatchString(stsEndpoint) {
			return AWSKeys{}, fmt.Errorf("invalid STS endpoint: '%s'. must match %s", stsEndpoint, awsSTSEndpointPattern)
		}
		opts = append(opts, config.WithBaseEndpoint(stsEndpoint))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return AWSKeys{}, fmt.Errorf("failed to load the AWS configuration: %w", err)
	}
	c, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return AWSKeys{}, err
	}
	return AWSKeys{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}, nil
}
