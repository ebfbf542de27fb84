package server

import (
	"context"
	"testing"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestProviderClientReused: deliveries of one Provider share one client
// (one transport and its connections) while its proxy is unchanged; a new
// proxy gives a new client; another Provider has its own.
func TestProviderClientReused(t *testing.T) {
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "proxy"},
		Data: map[string][]byte{"address": []byte("http://proxy-1:3128")}}
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).WithObjects(sec).Build()
	s := NewEventServer(c, c, nil, 0, logr.Discard())
	defer s.Close()
	p := func(uid string) *notificationv1.Provider {
		return &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p" + uid, UID: types.UID(uid)},
			Spec: notificationv1.ProviderSpec{Type: "generic", Address: "http://127.0.0.1:1/hook",
				ProxySecretRef: &meta.LocalObjectReference{Name: "proxy"}}}
	}
	client := func(pr *notificationv1.Provider) *notifier.Client {
		t.Helper()
		if _, err := s.notifier(context.Background(), pr); err != nil {
			t.Fatal(err)
		}
		pc, _ := s.clients.Peek(pr.UID)
		return pc.client
	}
	first := client(p("1"))
	if client(p("1")) != first {
		t.Error("a second delivery of the same Provider got a new client")
	}
	if client(p("2")) == first {
		t.Error("two Providers share a client")
	}
	sec.Data["address"] = []byte("http://proxy-2:3128")
	if err := c.Update(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	if client(p("1")) == first {
		t.Error("a changed proxy kept the old client")
	}
}
