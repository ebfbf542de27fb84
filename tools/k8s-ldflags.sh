# Sourced by build.sh and kubectl.sh (a change here changes both stamps).
# k8s_ldflags VERSION prints the -ldflags Kubernetes' own release build sets for
# VERSION (v1.MINOR.PATCH), so that clients parse the server's version and
# `kubectl version` reports the release.
k8s_ldflags() {
	local version=$1 minor flags="-s -w" pkg
	minor=${version#v1.}
	minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitVersion=$version"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	printf "%s\n" "$flags"
}
