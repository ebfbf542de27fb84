package project

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
)

func proj(spec argov1.AppProjectSpec) *argov1.AppProject {
	return &argov1.AppProject{ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "argocd"}, Spec: spec}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestNormalizeRepoURLAsArgoCD(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://GitHub.com/Acme/Infra-K8s.git", "https://github.com/acme/infra-k8s"},
		{" https://github.com/acme/infra ", "https://github.com/acme/infra"},
		{"git@github.com:acme/infra.git", "git@github.com/acme/infra"},
		{"ssh://git@github.com/acme/infra.git", "git@github.com/acme/infra"},
		{"https://github.com/acme/infra/", "https://github.com/acme/infra/"},
		{"https://github.com/acme/*", "https://github.com/acme/*"},
	}
	for _, tt := range tests {
		if got := NormalizeRepoURL(tt.in); got != tt.want {
			t.Errorf("NormalizeRepoURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheckSourceGlobsDeniesAndNormalises(t *testing.T) {
	tests := []struct {
		name  string
		repos []string
		url   string
		want  string
	}{
		{"star permits any", []string{"*"}, "https://github.com/acme/infra.git", ""},
		{"empty list permits none", nil, "https://github.com/acme/infra.git", "application repo https://github.com/acme/infra.git is not permitted in project 'team'"},
		{"exact after normalising case and .git", []string{"https://github.com/Acme/Infra"}, "https://github.com/acme/infra.git", ""},
		{"trailing slash is not dropped", []string{"https://github.com/acme/infra"}, "https://github.com/acme/infra/", "application repo https://github.com/acme/infra/ is not permitted in project 'team'"},
		{"star stops at slash", []string{"https://github.com/acme/*"}, "https://github.com/acme/team/infra", "application repo https://github.com/acme/team/infra is not permitted in project 'team'"},
		{"star within a segment", []string{"https://github.com/acme/*"}, "https://github.com/acme/infra", ""},
		{"double star crosses slashes", []string{"https://github.com/acme/**"}, "https://github.com/acme/team/infra", ""},
		{"deny beats allow", []string{"*", "!https://github.com/acme/secret"}, "https://github.com/acme/secret.git", "application repo https://github.com/acme/secret.git is not permitted in project 'team'"},
		{"deny list alone permits others", []string{"!https://github.com/acme/secret"}, "https://github.com/acme/infra", ""},
		{"scp-like SSH matches its ssh:// form", []string{"ssh://git@github.com/acme/infra"}, "git@github.com:acme/infra.git", ""},
		{"other repo", []string{"https://github.com/acme/infra"}, "https://github.com/evil/infra", "application repo https://github.com/evil/infra is not permitted in project 'team'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errText(CheckSource(proj(argov1.AppProjectSpec{SourceRepos: tt.repos}), tt.url))
			if got != tt.want {
				t.Errorf("CheckSource = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckDestinationServerOrNameGlobsWithDenies(t *testing.T) {
	type dst = argov1.ApplicationDestination
	const inCluster = "https://kubernetes.default.svc"
	tests := []struct {
		name                    string
		dests                   []dst
		server, clusterName, ns string
		want                    string
	}{
		{"default project permits all", Default().Destinations, inCluster, "", "production", ""},
		{"no destinations permits none", nil, inCluster, "", "production",
			"application destination server 'https://kubernetes.default.svc' and namespace 'production' do not match any of the allowed destinations in project 'team'"},
		{"server and namespace globs", []dst{{Server: "https://*.svc", Namespace: "prod-*"}}, inCluster, "", "prod-eu", ""},
		{"namespace misses", []dst{{Server: inCluster, Namespace: "staging"}}, inCluster, "", "production",
			"application destination server 'https://kubernetes.default.svc' and namespace 'production' do not match any of the allowed destinations in project 'team'"},
		{"name entry matches a resolved name", []dst{{Name: "in-cluster", Namespace: "*"}}, inCluster, "in-cluster", "production", ""},
		{"message shows the name", []dst{{Name: "remote", Namespace: "*"}}, inCluster, "in-cluster", "production",
			"application destination server 'in-cluster' and namespace 'production' do not match any of the allowed destinations in project 'team'"},
		{"server entry matches a name-addressed app's resolved server", []dst{{Server: inCluster, Namespace: "*"}}, inCluster, "in-cluster", "production", ""},
		{"denied namespace", []dst{{Server: "*", Namespace: "*"}, {Server: "*", Namespace: "!kube-system"}}, inCluster, "", "kube-system",
			"application destination server 'https://kubernetes.default.svc' and namespace 'kube-system' do not match any of the allowed destinations in project 'team'"},
		{"deny namespace entry permits others", []dst{{Server: "*", Namespace: "!kube-system"}}, inCluster, "", "production", ""},
		{"denied server", []dst{{Server: "*", Namespace: "*"}, {Server: "!https://prod.example.com", Namespace: "*"}}, "https://prod.example.com", "", "default",
			"application destination server 'https://prod.example.com' and namespace 'default' do not match any of the allowed destinations in project 'team'"},
		{"denied name", []dst{{Server: "*", Namespace: "*"}, {Name: "!prod", Namespace: "*"}}, "https://prod.example.com", "prod", "default",
			"application destination server 'prod' and namespace 'default' do not match any of the allowed destinations in project 'team'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errText(CheckDestination(proj(argov1.AppProjectSpec{Destinations: tt.dests}), tt.server, tt.clusterName, tt.ns))
			if got != tt.want {
				t.Errorf("CheckDestination = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPermittedKinds(t *testing.T) {
	type gk = metav1.GroupKind
	type item = argov1.ClusterResourceRestrictionItem
	tests := []struct {
		name                string
		spec                argov1.AppProjectSpec
		group, kind, object string
		clusterScoped       bool
		want                bool
	}{
		{"default permits cluster kinds", Default(), "rbac.authorization.k8s.io", "ClusterRole", "reader", true, true},
		{"default permits namespaced kinds", Default(), "apps", "Deployment", "api", false, true},
		{"empty cluster whitelist allows none", argov1.AppProjectSpec{}, "", "Namespace", "production", true, false},
		{"cluster whitelist by kind", argov1.AppProjectSpec{ClusterResourceWhitelist: []item{{Group: "", Kind: "Namespace"}}}, "", "Namespace", "production", true, true},
		{"cluster whitelist misses", argov1.AppProjectSpec{ClusterResourceWhitelist: []item{{Group: "", Kind: "Namespace"}}}, "rbac.authorization.k8s.io", "ClusterRole", "x", true, false},
		{"cluster whitelist name glob", argov1.AppProjectSpec{ClusterResourceWhitelist: []item{{Group: "*", Kind: "*", Name: "team-*"}}}, "", "Namespace", "team-a", true, true},
		{"cluster whitelist name glob misses", argov1.AppProjectSpec{ClusterResourceWhitelist: []item{{Group: "*", Kind: "*", Name: "team-*"}}}, "", "Namespace", "other", true, false},
		{"cluster blacklist", argov1.AppProjectSpec{ClusterResourceWhitelist: []item{{Group: "*", Kind: "*"}}, ClusterResourceBlacklist: []item{{Group: "", Kind: "Namespace"}}}, "", "Namespace", "x", true, false},
		{"cluster blacklist by name", argov1.AppProjectSpec{ClusterResourceWhitelist: []item{{Group: "*", Kind: "*"}}, ClusterResourceBlacklist: []item{{Group: "", Kind: "Namespace", Name: "kube-*"}}}, "", "Namespace", "team", true, true},
		{"namespaced allowed without lists", argov1.AppProjectSpec{}, "apps", "Deployment", "api", false, true},
		{"namespaced whitelist set and misses", argov1.AppProjectSpec{NamespaceResourceWhitelist: []gk{{Group: "", Kind: "ConfigMap"}}}, "apps", "Deployment", "api", false, false},
		{"namespaced whitelist glob", argov1.AppProjectSpec{NamespaceResourceWhitelist: []gk{{Group: "apps", Kind: "*"}}}, "apps", "Deployment", "api", false, true},
		{"namespaced whitelist present but empty allows none", argov1.AppProjectSpec{NamespaceResourceWhitelist: []gk{}}, "", "ConfigMap", "cfg", false, false},
		{"namespaced blacklist", argov1.AppProjectSpec{NamespaceResourceBlacklist: []gk{{Group: "", Kind: "Secret"}}}, "", "Secret", "s", false, false},
		{"namespaced blacklist glob group", argov1.AppProjectSpec{NamespaceResourceBlacklist: []gk{{Group: "*", Kind: "NetworkPolicy"}}}, "networking.k8s.io", "NetworkPolicy", "n", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Permitted(proj(tt.spec), tt.group, tt.kind, tt.object, tt.clusterScoped); got != tt.want {
				t.Errorf("Permitted = %v, want %v", got, tt.want)
			}
		})
	}
}
