// Package sopswire is the protocol between kustomize-controller and its
// SOPS helper, eddy-sops: JSON values, one after the other, on the
// helper's standard input (Hello, then Requests) and standard output (one
// Response to each). The helper exits at the end of its input.
//
// SOPS decryption runs in its own process so that the controller does not
// link the sops library: its key services bring in the AWS, GCP, Azure,
// Vault and Huawei SDKs, whose package initialisation alone costs the
// controller about 30 MiB of resident memory whether or not a
// Kustomization is ever decrypted. The helper is started for one build
// and holds the decryption Secret's keys only while that build runs.
//
// This package does not import the sops library.
package sopswire

import "github.com/getsops/sops/v3/cmd/sops/formats"

// Helper is the helper binary's name: kustomize-controller looks for it
// beside its own executable, then in PATH.
const Helper = "eddy-sops"

// Flux compatible decryption Secret key names.
const (
	// PGPExt ends a decryption Secret key holding an armored OpenPGP key.
	PGPExt = ".asc"
	// AgeExt ends a decryption Secret key holding age identities.
	AgeExt = ".agekey"
)

// Flux compatible decryption Secret entries holding the credentials of a
// key management service: an OpenBao/Vault token, AWS static credentials
// (YAML), an Azure AAD configuration (YAML or JSON), a GCP service account
// (JSON).
const (
	VaultToken = "sops.vault-token"
	AWSKMS     = "sops.aws-kms"
	AzureKV    = "sops.azure-kv"
	GCPKMS     = "sops.gcp-kms"
)

// Credentials are the decryption Secret entries of key management
// services, and the service of each.
var Credentials = map[string]string{
	VaultToken: "OpenBao/Vault transit",
	AWSKMS:     "AWS KMS",
	AzureKV:    "Azure Key Vault",
	GCPKMS:     "GCP KMS",
}

// Key is one entry of the decryption Secret: an age identity file
// (`*.agekey`), an armored OpenPGP private key (`*.asc`), or a Credentials
// entry.
type Key struct {
	Name string `json:"name"`
	Data []byte `json:"data,omitempty"`
}

// Version is the protocol's: the controller sends it in Hello and the
// helper answers with its own, so that a helper of another release (a
// stale eddy-sops left beside a new controller) is refused by name rather
// than misread. Raise it at any change of these types' meaning.
const Version = 3

// Hello is the first value the helper reads: the protocol version and
// the keys of the build's decryption Secret, in the order they are
// imported.
type Hello struct {
	Version int   `json:"version"`
	Keys    []Key `json:"keys"`
}

// Request asks for one SOPS document to be decrypted.
type Request struct {
	// Data is the encrypted document (at most 5 MiB; the controller checks).
	Data []byte `json:"data"`
	// In is the document's format, Out the format of the plaintext.
	In  formats.Format `json:"in"`
	Out formats.Format `json:"out"`
	// CheckMAC asks that the document's MAC match its decrypted content.
	CheckMAC bool `json:"checkMAC,omitempty"`
}

// Response answers Hello (Plain and Values empty) or a Request.
type Response struct {
	// Plain is the decrypted document in the requested format.
	Plain []byte `json:"plain,omitempty"`
	// Values are the plaintext of each value that was encrypted, for
	// masking in messages: bytes, as a value need not be UTF-8 (a JSON
	// string would replace each invalid byte by U+FFFD).
	Values [][]byte `json:"values,omitempty"`
	// Error is the failure's message, which never holds a decrypted value.
	Error string `json:"error,omitempty"`
	// Key names the Hello key that could not be imported (Error says why).
	Key string `json:"key,omitempty"`
	// Version is the helper's protocol version, in its answer to Hello.
	Version int `json:"version,omitempty"`
}
