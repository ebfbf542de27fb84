package kustomize

import "testing"

// TestSOPSEncryptedAcceptsATopLevelSOPSField: every form that one of the
// former rules took for an encrypted object (a MAC starting ENC[, any
// non-empty MAC, any top-level sops field) is one; a sops field below
// the top level is not.
func TestSOPSEncryptedAcceptsATopLevelSOPSField(t *testing.T) {
	for _, c := range []struct {
		name string
		obj  map[string]any
		want bool
	}{
		{"MAC as sops writes it", map[string]any{"sops": map[string]any{"mac": "ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]"}}, true},
		{"other MAC", map[string]any{"sops": map[string]any{"mac": "plain"}}, true},
		{"no MAC", map[string]any{"sops": map[string]any{"version": "3.9.0"}}, true},
		{"not a map", map[string]any{"sops": "yes"}, true},
		{"null", map[string]any{"sops": nil}, true},
		{"nested", map[string]any{"data": map[string]any{"sops": map[string]any{"mac": "ENC[x]"}}}, false},
		{"none", map[string]any{"kind": "Secret"}, false},
	} {
		if got := SOPSEncrypted(c.obj); got != c.want {
			t.Errorf("%s: SOPSEncrypted = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSOPSDocumentTellsTheFormatByItsMarker: each format's marker, the
// first one in ini, dotenv, YAML, JSON order winning; text with "sops" and
// "ENC[" but no marker (a former rule of eddy build's masking) is no SOPS
// document, as kustomize-controller would not decrypt it.
func TestSOPSDocumentTellsTheFormatByItsMarker(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		want      SOPSFormat
	}{
		{"ini", "[app]\npw = ENC[x]\n\n[sops]\nmac = ENC[y]\n", SOPSINI},
		{"dotenv", "PW=ENC[x]\nsops_mac=ENC[y]\n", SOPSDotenv},
		{"YAML", "pw: ENC[x]\nsops:\n    mac: ENC[y]\n", SOPSYAML},
		{"JSON", "{\n\t\"pw\": \"ENC[x]\",\n\t\"sops\": {\n\t\t\"mac\": \"ENC[y]\"\n\t}\n}", SOPSJSON},
		{"binary envelope", `{"data": "ENC[x]", "sops": {"mac": "ENC[y]"}}`, SOPSJSON},
		{"ini before YAML", "[sops]\nmac: ENC[y]\n", SOPSINI},
		{"compact JSON", `{"sops":{"mac":"ENC[y]"}}`, NotSOPS},
		{"plain", "pw: hunter2\n", NotSOPS},
	} {
		if got := SOPSDocument([]byte(c.doc)); got != c.want {
			t.Errorf("%s: SOPSDocument = %v, want %v", c.name, got, c.want)
		}
		if c.want != NotSOPS && !HasSOPSMarker([]byte(c.doc), c.want) {
			t.Errorf("%s: HasSOPSMarker is false for its own format", c.name)
		}
	}
	if HasSOPSMarker([]byte("mac: ENC[y]"), SOPSJSON) || HasSOPSMarker([]byte("[sops]"), NotSOPS) {
		t.Error("HasSOPSMarker found another format's marker")
	}
}
