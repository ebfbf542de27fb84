package sopstest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"

	"cloud.google.com/go/kms/apiv1/kmspb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// GCPKMS is a fake GCP KMS (gRPC Encrypt and Decrypt over TLS at
// Endpoint, for SOPS_GCP_KMS_ENDPOINT) and OAuth2 token endpoint (at
// TokenURL, named by the service account JSON), whose certificate
// TrustTLSFakes trusts.
type GCPKMS struct {
	sealer
	kmspb.UnimplementedKeyManagementServiceServer
	Endpoint string
	TokenURL string
	// ServiceAccount is a service account key JSON whose token the fake
	// accepts (a sops.gcp-kms entry).
	ServiceAccount string
	token          string
}

// NewGCPKMS starts a GCP KMS fake; it stops at close's call.
func NewGCPKMS() (*GCPKMS, func(), error) {
	g := &GCPKMS{token: "gcp-token-1"}
	ts := httptest.NewTLSServer(http.HandlerFunc(g.serveToken))
	g.TokenURL = ts.URL + "/token"
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		ts.Close()
		return nil, nil, err
	}
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "eddy-test", "private_key_id": "k1", "client_email": "sops@eddy-test.iam.gserviceaccount.com",
		"client_id": "1", "token_uri": g.TokenURL,
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})),
	})
	g.ServiceAccount = string(sa)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Close()
		return nil, nil, err
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: ts.TLS.Certificates})))
	kmspb.RegisterKeyManagementServiceServer(srv, g)
	go func() { _ = srv.Serve(lis) }()
	g.Endpoint = lis.Addr().String()
	return g, func() { srv.Stop(); ts.Close() }, nil
}

func (g *GCPKMS) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.ParseForm() != nil || r.PostForm.Get("assertion") == "" {
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": g.token, "token_type": "Bearer", "expires_in": 3600})
}

func (g *GCPKMS) authorized(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		if v == "Bearer "+g.token {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "request had invalid authentication credentials")
}

func (g *GCPKMS) Encrypt(ctx context.Context, req *kmspb.EncryptRequest) (*kmspb.EncryptResponse, error) {
	if err := g.authorized(ctx); err != nil {
		return nil, err
	}
	return &kmspb.EncryptResponse{Name: req.Name, Ciphertext: []byte(g.seal(req.Name+"|", req.Plaintext))}, nil
}

func (g *GCPKMS) Decrypt(ctx context.Context, req *kmspb.DecryptRequest) (*kmspb.DecryptResponse, error) {
	if err := g.authorized(ctx); err != nil {
		return nil, err
	}
	p, ok := g.open(string(req.Ciphertext))
	if !ok || !strings.HasPrefix(string(req.Ciphertext), req.Name+"|") {
		return nil, status.Error(codes.InvalidArgument, "decryption failed")
	}
	return &kmspb.DecryptResponse{Plaintext: p}, nil
}

// GCPKeyID is a GCP KMS key's resource ID.
func GCPKeyID(name string) string {
	return "projects/eddy-test/locations/global/keyRings/eddy/cryptoKeys/" + name
}
