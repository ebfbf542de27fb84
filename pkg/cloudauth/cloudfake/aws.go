package cloudfake

import (
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// AWS is a fake of the two AWS calls behind ECR credentials: STS's
// AssumeRoleWithWebIdentity (what IRSA's token file is exchanged at) and
// ECR's GetAuthorizationToken. Point the SDK at it with
// AWS_ENDPOINT_URL_STS and AWS_ENDPOINT_URL_ECR set to URL.
type AWS struct {
	URL string
	// WebIdentityToken is the token STS takes; it answers with
	// SessionKeyID. AccessKeyIDs are the key IDs ECR takes (the static
	// ones of the environment, and SessionKeyID once STS issued it).
	WebIdentityToken string
	SessionKeyID     string
	AccessKeyIDs     []string
	// Password is what ECR's token carries, for user AWS, valid TTL.
	Password string
	TTL      time.Duration

	srv    *httptest.Server
	mu     sync.Mutex
	issued int
	regs   []string
}

// StartAWS serves ECR tokens with password to requests signed with one of
// accessKeyIDs.
func StartAWS(password string, accessKeyIDs ...string) *AWS {
	a := &AWS{Password: password, AccessKeyIDs: accessKeyIDs, SessionKeyID: "ASIAFAKESESSION", TTL: 12 * time.Hour}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	a.URL = a.srv.URL
	return a
}

// Close stops the server.
func (a *AWS) Close() { a.srv.Close() }

// Issued counts the ECR tokens issued; Regions lists the regions of the
// signed requests.
func (a *AWS) Issued() (int, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.issued, append([]string(nil), a.regs...)
}

func (a *AWS) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") == "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken" {
		a.ecr(w, r)
		return
	}
	_ = r.ParseForm()
	if r.Form.Get("Action") != "AssumeRoleWithWebIdentity" {
		http.Error(w, "unknown action", http.StatusBadRequest)
		return
	}
	if a.WebIdentityToken == "" || r.Form.Get("WebIdentityToken") != a.WebIdentityToken || r.Form.Get("RoleArn") == "" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>` +
			`<Message>Couldn't retrieve verification key from your identity provider</Message></Error></ErrorResponse>`))
		return
	}
	type creds struct {
		AccessKeyID     string `xml:"AccessKeyId"`
		SecretAccessKey string
		SessionToken    string
		Expiration      string
	}
	type result struct {
		XMLName     xml.Name `xml:"AssumeRoleWithWebIdentityResponse"`
		Credentials creds    `xml:"AssumeRoleWithWebIdentityResult>Credentials"`
	}
	a.mu.Lock()
	a.AccessKeyIDs = append(a.AccessKeyIDs, a.SessionKeyID)
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	_ = xml.NewEncoder(w).Encode(result{Credentials: creds{AccessKeyID: a.SessionKeyID, SecretAccessKey: "fake-secret",
		SessionToken: "fake-session", Expiration: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}})
}

// ecr answers GetAuthorizationToken to a request SigV4-signed for ecr
// with a known key ID (the signature itself is not checked).
func (a *AWS) ecr(w http.ResponseWriter, r *http.Request) {
	h := r.Header.Get("Authorization")
	_, scope, _ := strings.Cut(h, "Credential=")
	parts := strings.Split(strings.SplitN(scope, ",", 2)[0], "/")
	a.mu.Lock()
	known := len(parts) == 5 && parts[3] == "ecr" && slices.Contains(a.AccessKeyIDs, parts[0])
	a.mu.Unlock()
	if !strings.HasPrefix(h, "AWS4-HMAC-SHA256 ") || !known {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"UnrecognizedClientException","message":"The security token included in the request is invalid."}`))
		return
	}
	a.mu.Lock()
	a.issued++
	a.regs = append(a.regs, parts[2])
	a.mu.Unlock()
	tok := base64.StdEncoding.EncodeToString([]byte("AWS:" + a.Password))
	writeJSON(w, http.StatusOK, map[string]any{"authorizationData": []map[string]any{{
		"authorizationToken": tok, "expiresAt": time.Now().Add(a.TTL).Unix(), "proxyEndpoint": "https://fake"}}})
}
