package decryptor

import "strings"

// helperEnvPrefixes and helperEnvNames are the environment variables the
// helper gets from the controller: those the AWS, Azure, GCP and Vault
// SDKs read for the controller's own (ambient) credentials and endpoints
// (workload identity token files, AWS_ENDPOINT_URL_KMS, VAULT_TOKEN, …),
// the trust roots and proxies. A decryption Secret entry takes precedence
// over them, as in Flux. Nothing else reaches the helper: its keys come on
// its input only.
var (
	helperEnvPrefixes = []string{"AWS_", "AZURE_", "GOOGLE_", "GCE_METADATA_", "VAULT_", "SOPS_GCP_KMS_"}
	helperEnvNames    = map[string]bool{
		"SOPS_HC_VAULT_ALLOWLIST": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "HOME": true,
		"HTTPS_PROXY": true, "HTTP_PROXY": true, "NO_PROXY": true, "https_proxy": true, "http_proxy": true, "no_proxy": true,
	}
)

// helperEnv keeps of environ (os.Environ's form) what the helper gets.
func helperEnv(environ []string) []string {
	out := []string{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if helperEnvNames[name] {
			out = append(out, kv)
			continue
		}
		for _, p := range helperEnvPrefixes {
			if strings.HasPrefix(name, p) {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}
