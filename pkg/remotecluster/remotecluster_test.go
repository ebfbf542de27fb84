package remotecluster

import "testing"

func TestDisplayHostDropsCredentials(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://10.0.0.1:6443", "https://10.0.0.1:6443"},
		{"https://user:secret@example.com/k8s?token=secret#frag", "https://example.com/k8s"},
		{"https://example.com?", "https://example.com"},
		{"://bad", "<unparsable server URL>"},
	} {
		if got := DisplayHost(tc.in); got != tc.want {
			t.Errorf("DisplayHost(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
