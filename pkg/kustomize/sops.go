package kustomize

import "bytes"

// SOPSFormat is the format of a SOPS document as its marker tells it.
type SOPSFormat int

// The formats a SOPS document is told apart in.
const (
	NotSOPS SOPSFormat = iota
	SOPSINI
	SOPSDotenv
	SOPSYAML
	// SOPSJSON is also the format of sops' binary documents, whose
	// encrypted form is a JSON envelope.
	SOPSJSON
)

// sopsMarkers are the text sops writes in a document of each format (its
// MAC, or the ini section), in the order SOPSDocument checks them. Flux
// compatible.
var sopsMarkers = []struct {
	format SOPSFormat
	marker []byte
}{
	{SOPSINI, []byte("[sops]")},
	{SOPSDotenv, []byte("sops_mac=ENC[")},
	{SOPSYAML, []byte("mac: ENC[")},
	{SOPSJSON, []byte(`"mac": "ENC[`)},
}

// SOPSDocument returns the format of the SOPS document data holds (a file,
// or a Secret's data value decoded), the first of ini, dotenv, YAML and
// JSON whose marker data contains; NotSOPS when data holds none.
func SOPSDocument(data []byte) SOPSFormat {
	for _, m := range sopsMarkers {
		if bytes.Contains(data, m.marker) {
			return m.format
		}
	}
	return NotSOPS
}

// HasSOPSMarker tells whether data holds the marker of a SOPS document of
// format f (false for NotSOPS).
func HasSOPSMarker(data []byte, f SOPSFormat) bool {
	for _, m := range sopsMarkers {
		if m.format == f {
			return bytes.Contains(data, m.marker)
		}
	}
	return false
}

// SOPSEncrypted tells whether obj (a decoded YAML or JSON document, a
// built object) is SOPS-encrypted as a whole: it has a top-level `sops`
// field, whatever it holds. Flux compatible (its kustomize-controller
// decrypts and refuses on that field alone); a `sops` without a MAC then
// fails in sops' decryption, which says why. kustomize-controller decrypts
// such an object, refuses it (a Secret) when decryption is not
// configured, and eddy build and diff mask it.
func SOPSEncrypted(obj map[string]any) bool {
	_, ok := obj["sops"]
	return ok
}
