package sopshelper

import (
	"strings"
	"testing"

	"github.com/eddyops/eddy/kustomize-controller/internal/sopswire"
)

func TestRefuseNamesEntry(t *testing.T) {
	d, _, err := New([]sopswire.Key{{Name: "sops.vault-token"}})
	if err != nil {
		t.Fatal(err)
	}
	ks := &keyServer{unsupported: map[string]string{"sops.vault-token": "OpenBao/Vault transit"}}
	if e := ks.refuse("OpenBao/Vault transit"); !strings.Contains(e.Error(), "not supported by Eddy yet: the decryption Secret's 'sops.vault-token' is not used") {
		t.Fatal(e)
	}
	if e := ks.refuse("AWS KMS"); !strings.Contains(e.Error(), "AWS KMS keys are not supported by Eddy yet (only age and OpenPGP keys") {
		t.Fatal(e)
	}
	if len(d.services) != 1 {
		t.Fatal("no key service")
	}
}
