// Command eddy-sops is kustomize-controller's SOPS helper: started by the
// controller for one build of a Kustomization with spec.decryption, it
// reads the decryption Secret's keys and then SOPS documents on its
// standard input and writes their plaintext on its standard output
// (package sopswire), and exits at the end of its input. It prints
// nothing else and reads no key file or GnuPG home; the cloud SDKs read
// the environment the controller passes on (its own credentials).
//
// It is a process of its own so that kustomize-controller does not link
// the sops library and the cloud SDKs its key services bring.
package main

import (
	"fmt"
	"os"

	"github.com/eddyops/eddy/kustomize-controller/internal/sopshelper"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "eddy-sops: kustomize-controller's SOPS helper takes no arguments; it is started by kustomize-controller")
		os.Exit(2)
	}
	if err := sopshelper.Serve(os.Stdin, os.Stdout); err != nil {
		// The message names the protocol step only, never a value.
		fmt.Fprintln(os.Stderr, "eddy-sops:", err)
		os.Exit(1)
	}
}
