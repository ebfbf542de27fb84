package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// providerTypes are the 35 values of the Provider CRD's spec.type enum.
var providerTypes = strings.Split("slack;discord;msteams;rocket;generic;generic-hmac;github;gitlab;gitea;giteapullrequestcomment;"+
	"bitbucketserver;bitbucket;azuredevops;googlechat;googlepubsub;webex;sentry;azureeventhub;telegram;lark;matrix;opsgenie;"+
	"alertmanager;grafana;githubdispatch;githubpullrequestcomment;gitlabmergerequestcomment;pagerduty;datadog;nats;zulip;otel;"+
	"zoom;incident.io;mastodon", ";")

// notificationCreateErrors are invalid `create alert-provider` and
// `create alert` commands, each failing with flux's message.
var notificationCreateErrors = [][]string{
	{"alert-provider", "hook"},
	{"alert-provider", "Hook", "--type=slack"},
	{"alert-provider", "hook", "--type=slack", "--label=team"},
	{"alert", "apps"},
	{"alert", "apps", "--provider-ref=hook"},
	{"alert", "apps", "--provider-ref=hook", "--event-source=Kustomization"},
}

// TestCreateNotificationExportsAndFailsAsFlux: bin/eddy's `create
// alert-provider --export` of every provider type, with every flag, and
// `create alert --export` with every flag, are bin/flux's YAML but for
// the apiVersion (bin/flux, v2.9, writes v1beta3; Eddy writes v1, as Flux
// v2.10 stores); each invalid command fails with flux's message.
func TestCreateNotificationExportsAndFailsAsFlux(t *testing.T) {
	u := newUser(t)
	flux := newFluxCLI(t, filepath.Join(t.TempDir(), "no-kubeconfig"))
	var creates [][]string
	for i, typ := range providerTypes {
		creates = append(creates, []string{"alert-provider", fmt.Sprintf("provider-%d", i), "--type=" + typ, "--channel=ops",
			"--username=flux", "--address=https://example.org/acme/app", "--secret-ref=" + typ + "-secret", "--label=team=a,tier=web", "-n", "apps"})
	}
	creates = append(creates,
		[]string{"alert", "apps", "--provider-ref=slack", "--event-severity=error", "--event-source=Kustomization/*,GitRepository/app.flux-system",
			"--event-source=HelmRelease/podinfo", "--label=team=a", "-n", "apps"},
		[]string{"alert", "info", "--provider-ref=hook", "--event-source=Kustomization/flux-system"})
	for _, args := range creates {
		args = append([]string{"create"}, append(args, "--export")...)
		got := u.must(args...)
		want, err := flux.run(args...)
		want = strings.Replace(want, "apiVersion: notification.toolkit.fluxcd.io/v1beta3\n", "apiVersion: notification.toolkit.fluxcd.io/v1\n", 1)
		if err != nil || got != want {
			t.Errorf("%s:\neddy:\n%s\nflux (err=%v):\n%s", strings.Join(args, " "), got, err, want)
		}
	}
	for _, args := range notificationCreateErrors {
		args = append([]string{"create"}, append(args, "--export")...)
		got := u.fails(args...)
		want, err := flux.run(args...)
		if err == nil || got != want {
			t.Errorf("%s:\neddy:\n%s\nflux (err=%v):\n%s", strings.Join(args, " "), got, err, want)
		}
	}
}
