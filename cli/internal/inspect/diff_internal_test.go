package inspect

import "testing"

func TestServiceOf(t *testing.T) {
	for host, want := range map[string]string{
		"source-controller.flux-system.svc.cluster.local.": "source-controller flux-system",
		"source-controller.flux-system.svc.cluster.local":  "source-controller flux-system",
		"source-controller.flux-system.svc":                "source-controller flux-system",
		"source-controller.flux-system":                    "source-controller flux-system",
		"source-controller":                                "",
		"artifacts.example.com":                            "",
		"10.0.0.1":                                         "",
		".flux-system":                                     "",
	} {
		svc, ns, ok := serviceOf(host)
		got := ""
		if ok {
			got = svc + " " + ns
		}
		if got != want {
			t.Errorf("serviceOf(%q) = %q, want %q", host, got, want)
		}
	}
}
