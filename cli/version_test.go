package main

import "testing"

// imageNameTag splits images as flux version does (flux2:cmd/flux/version.go
// splitImageStr): the last path element and everything after its colon.
func TestImageNameTag(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct{ image, name, tag string }{
		{"ghcr.io/eddyops/source-controller:v1.0.0", "source-controller", "v1.0.0"},
		{"localhost:5000/eddy/helm-controller:dev", "helm-controller", "dev"},
		{"kustomize-controller:v2", "kustomize-controller", "v2"},
		{"ghcr.io/eddyops/notification-controller:v1@" + digest, "notification-controller", "v1@" + digest},
	} {
		name, tag, err := imageNameTag(c.image)
		if err != nil || name != c.name || tag != c.tag {
			t.Errorf("imageNameTag(%q) = %q, %q, %v; want %q, %q", c.image, name, tag, err, c.name, c.tag)
		}
	}
	for _, image := range []string{"ghcr.io/eddyops/source-controller", "ghcr.io/eddyops/source-controller@" + digest, "UPPER/case:x"} {
		if _, _, err := imageNameTag(image); err == nil {
			t.Errorf("imageNameTag(%q) gave no error; want one (no tag, or not a reference)", image)
		}
	}
}

func TestDistribution(t *testing.T) {
	for _, c := range []struct {
		i    installation
		want string
	}{
		{installation{partOf: "flux", version: "v1.0.0"}, "flux-v1.0.0"},
		{installation{version: "v1.0.0"}, "v1.0.0"},
		{installation{}, ""},
	} {
		if got := c.i.distribution(); got != c.want {
			t.Errorf("%+v.distribution() = %q, want %q", c.i, got, c.want)
		}
	}
}
