package controller

import (
	"encoding/base64"
	"testing"
)

// commitSHA is the commit the events of the type tests are about.
const commitSHA = "0123456789abcdef0123456789abcdef01234567"

// gitTypeCases are the commit-status types and githubdispatch, each with
// the address form its service uses and the call that sets the status.
func gitTypeCases() []typeCase {
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	return []typeCase{
		// The status context is the Provider's commitStatusExpr over the
		// event, the Alert and the Provider.
		{typ: "github", addressPath: "/acme/app", secret: map[string]string{"token": "ghs"},
			path: "/api/v3/repos/acme/app/statuses/" + commitSHA, header: "Authorization", value: "Bearer ghs",
			body: `"context":"flux/kustomization/apps/github/github"`,
			commitStatusExpr: "'flux/' + event.involvedObject.kind.lowerAscii() + '/' + event.involvedObject.name + " +
				"'/' + alert.metadata.name + '/' + provider.spec.type",
			list: "/api/v3/repos/acme/app/commits/" + commitSHA + "/statuses"},
		{typ: "gitlab", addressPath: "/group/app", secret: map[string]string{"token": "glt"},
			path: "/api/v4/projects/group/app/statuses/" + commitSHA, header: "PRIVATE-TOKEN", value: "glt", body: `"state":"failed"`,
			list: "/api/v4/projects/group/app/repository/commits/" + commitSHA + "/statuses"},
		{typ: "gitea", addressPath: "/acme/app.git", secret: map[string]string{"token": "gt"},
			path: "/api/v1/repos/acme/app/statuses/" + commitSHA, header: "Authorization", value: "token gt", body: `"state":"failure"`},
		{typ: "bitbucketserver", addressPath: "/bb/scm/PRJ/app.git", secret: map[string]string{"username": "bot", "password": "pw"},
			path: "/bb/rest/api/latest/projects/PRJ/repos/app/commits/" + commitSHA + "/builds", header: "Authorization", value: basic("bot", "pw"),
			body: `"state":"FAILED","name":"kustomization/apps [health check failed]"`},
		{typ: "bitbucket", addressPath: "/acme/app", secret: map[string]string{"token": "bot:app-pw"},
			path: "/2.0/repositories/acme/app/commit/" + commitSHA + "/statuses/build", header: "Authorization", value: basic("bot", "app-pw"),
			body: `"state":"FAILED"`},
		{typ: "azuredevops", addressPath: "/org/proj/_git/app", secret: map[string]string{"token": "pat"},
			path: "/org/proj/_apis/git/repositories/app/commits/" + commitSHA + "/statuses", header: "Authorization", value: basic("", "pat"),
			body: `"state":"error"`},
		{typ: "githubdispatch", addressPath: "/acme/app", secret: map[string]string{"token": "gh"},
			path: "/api/v3/repos/acme/app/dispatches", header: "Authorization", value: "Bearer gh", body: `"event_type":"Kustomization/apps.`},
		{typ: "githubpullrequestcomment", addressPath: "/acme/app", secret: map[string]string{"token": "ghc"},
			path: "/api/v3/repos/acme/app/issues/42/comments", header: "Authorization", value: "Bearer ghc", body: `"body":"\u003c!-- flux-pr-comment-key:`},
		{typ: "giteapullrequestcomment", addressPath: "/acme/app.git", secret: map[string]string{"token": "gtc"},
			path: "/api/v1/repos/acme/app/issues/42/comments", header: "Authorization", value: "token gtc", body: `"body":"\u003c!-- flux-pr-comment-key:`},
		{typ: "gitlabmergerequestcomment", addressPath: "/group/app", secret: map[string]string{"token": "glc"},
			path: "/api/v4/projects/group/app/merge_requests/42/notes", header: "PRIVATE-TOKEN", value: "glc", body: `"body":"\u003c!-- flux-mr-comment-key:`},
	}
}

// TestBinaryDeliversGitTypes: the built binary sets the commit status of
// an error event about a commit through a Provider of each git type (the
// github one names its status with a commitStatusExpr; GitHub and GitLab
// list the commit's statuses first), each
// addressed to its own fake of the service, dispatches it to GitHub and
// comments on the event's pull or merge request on GitHub, Gitea and GitLab.
func TestBinaryDeliversGitTypes(t *testing.T) {
	deliverToTypes(t, "gittypes", gitTypeCases())
}
