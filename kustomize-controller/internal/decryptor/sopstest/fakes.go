package sopstest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// sealer is a fake key management service's keys: a ciphertext is a
// random name for the plaintext it was given, known only to the fake.
type sealer struct {
	mu    sync.Mutex
	plain map[string][]byte
	// Calls counts the successful decryptions.
	Calls int
}

func (s *sealer) seal(prefix string, p []byte) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	c := prefix + base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plain == nil {
		s.plain = map[string][]byte{}
	}
	s.plain[c] = append([]byte(nil), p...)
	return c
}

func (s *sealer) open(c string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.plain[c]
	if ok {
		s.Calls++
	}
	return p, ok
}

// Decryptions is the number of data keys the fake decrypted.
func (s *sealer) Decryptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Calls
}

// TrustTLSFakes writes the certificate of httptest's TLS servers (the
// Azure and GCP fakes serve it) to a file in dir and returns its path, for
// SSL_CERT_FILE: set before the process first reads its trust roots, and
// passed on by kustomize-controller to its helper.
func TrustTLSFakes(dir string) (string, error) {
	s := newTLSProbe()
	defer s.Close()
	p := filepath.Join(dir, "fakes-ca.pem")
	return p, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o600)
}

// Vault is a fake OpenBao/Vault transit engine at URL: POST
// /v1/<engine>/encrypt/<key> and /v1/<engine>/decrypt/<key>, with the
// token Token.
type Vault struct {
	sealer
	URL   string
	Token string
}

// NewVault starts a Vault fake; it stops at close's call.
func NewVault(token string) (*Vault, func()) {
	v := &Vault{Token: token}
	s := httptest.NewServer(http.HandlerFunc(v.serve))
	v.URL = s.URL
	return v, s.Close
}

func (v *Vault) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Vault-Token") != v.Token {
		http.Error(w, `{"errors":["permission denied"]}`, http.StatusForbidden)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/"), "/")
	if r.Method != http.MethodPut && r.Method != http.MethodPost || len(parts) != 3 {
		http.Error(w, `{"errors":["unsupported path"]}`, http.StatusNotFound)
		return
	}
	var body struct{ Plaintext, Ciphertext string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"errors":["bad body"]}`, http.StatusBadRequest)
		return
	}
	var data map[string]string
	switch parts[1] {
	case "encrypt":
		p, err := base64.StdEncoding.DecodeString(body.Plaintext)
		if err != nil {
			http.Error(w, `{"errors":["bad plaintext"]}`, http.StatusBadRequest)
			return
		}
		data = map[string]string{"ciphertext": v.seal("vault:v1:"+parts[2]+":", p)}
	case "decrypt":
		p, ok := v.open(body.Ciphertext)
		if !ok || !strings.HasPrefix(body.Ciphertext, "vault:v1:"+parts[2]+":") {
			http.Error(w, `{"errors":["cipher: message authentication failed"]}`, http.StatusBadRequest)
			return
		}
		data = map[string]string{"plaintext": base64.StdEncoding.EncodeToString(p)}
	default:
		http.Error(w, `{"errors":["unsupported path"]}`, http.StatusNotFound)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data})
}

// AWSKMS is a fake AWS KMS (the JSON 1.1 Encrypt and Decrypt calls) at
// URL, for AWS_ENDPOINT_URL_KMS; requests must be signed with the access
// key id AccessKeyID.
type AWSKMS struct {
	sealer
	URL         string
	AccessKeyID string
}

// NewAWSKMS starts an AWS KMS fake; it stops at close's call.
func NewAWSKMS(accessKeyID string) (*AWSKMS, func()) {
	k := &AWSKMS{AccessKeyID: accessKeyID}
	s := httptest.NewServer(http.HandlerFunc(k.serve))
	k.URL = s.URL
	return k, s.Close
}

func awsError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func (k *AWSKMS) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Authorization"), "Credential="+k.AccessKeyID+"/") {
		awsError(w, http.StatusBadRequest, "UnrecognizedClientException", "The security token included in the request is invalid.")
		return
	}
	var body struct {
		KeyId          string
		Plaintext      []byte
		CiphertextBlob []byte
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		awsError(w, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	var out map[string]any
	switch r.Header.Get("X-Amz-Target") {
	case "TrentService.Encrypt":
		out = map[string]any{"KeyId": body.KeyId, "CiphertextBlob": []byte(k.seal(body.KeyId+"|", body.Plaintext))}
	case "TrentService.Decrypt":
		p, ok := k.open(string(body.CiphertextBlob))
		if !ok {
			awsError(w, http.StatusBadRequest, "InvalidCiphertextException", "")
			return
		}
		out = map[string]any{"KeyId": strings.Split(string(body.CiphertextBlob), "|")[0], "Plaintext": p}
	default:
		awsError(w, http.StatusBadRequest, "UnknownOperationException", "")
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// KMSArn is an AWS KMS key's ARN of the fake's.
func KMSArn(name string) string {
	return fmt.Sprintf("arn:aws:kms:us-east-1:123456789012:key/%s", name)
}

// newTLSProbe is a TLS server with httptest's certificate, the one every
// httptest TLS server serves.
func newTLSProbe() *httptest.Server {
	s := httptest.NewUnstartedServer(http.NotFoundHandler())
	s.StartTLS()
	return s
}
