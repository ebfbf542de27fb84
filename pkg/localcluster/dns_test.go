package localcluster_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/eddyops/eddy/pkg/localcluster"
	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// resolverAt is a resolver that asks only the DNS server at addr.
func resolverAt(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// fakeUpstream answers A queries for name with ip, and NXDOMAIN for anything else.
func fakeUpstream(t *testing.T, name string, ip [4]byte) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RecursionAvailable: true})
			b.EnableCompression()
			_ = b.StartQuestions()
			_ = b.Question(q)
			if q.Name.String() != name {
				b = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RCode: dnsmessage.RCodeNameError})
				_ = b.StartQuestions()
				_ = b.Question(q)
			} else if q.Type == dnsmessage.TypeA {
				_ = b.StartAnswers()
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AResource{A: ip})
			}
			msg, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(msg, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

func TestClusterDNSAnswersServiceNames(t *testing.T) {
	if _, err := localcluster.CoreDNSBinary(); err != nil {
		t.Skipf("no CoreDNS: %v", err)
	}
	c := start(t, localcluster.Options{Profile: localcluster.ProfileFull})
	upstream := fakeUpstream(t, "outside.example.", [4]byte{192, 0, 2, 7})
	ctx := context.Background()
	dns, err := c.StartDNS(ctx, localcluster.DNSOptions{Upstreams: []string{upstream}, LogQueries: true})
	if errors.Is(err, localcluster.ErrBinariesMissing) {
		t.Skipf("no CoreDNS: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CoreDNS on %s, ready at %s", dns.Addr, dns.ReadyURL)
	cs := kubernetes.NewForConfigOrDie(c.Config)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dns-test"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services("dns-test").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := resolverAt(dns.Addr)
	lookup := func(name string) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		return r.LookupHost(ctx, name)
	}
	// The Service's record appears once CoreDNS's informer sees it: wait on the answer.
	var got []string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got, err = lookup("web.dns-test.svc.cluster.local.")
		return err == nil && len(got) == 1 && got[0] == svc.Spec.ClusterIP, nil
	})
	if err != nil {
		t.Fatalf("web.dns-test.svc.cluster.local: %v; want [%s]", got, svc.Spec.ClusterIP)
	}
	kube, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := lookup("kubernetes.default.svc.cluster.local."); err != nil || len(got) != 1 || got[0] != kube.Spec.ClusterIP {
		t.Errorf("kubernetes.default.svc.cluster.local: %v, %v; want [%s]", got, err, kube.Spec.ClusterIP)
	}
	var dnsErr *net.DNSError
	if got, err := lookup("missing.dns-test.svc.cluster.local."); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("missing.dns-test.svc.cluster.local: %v, %v; want NXDOMAIN", got, err)
	}
	if got, err := lookup("outside.example."); err != nil || len(got) != 1 || got[0] != "192.0.2.7" {
		t.Errorf("outside.example (forwarded to %s): %v, %v; want [192.0.2.7]", upstream, got, err)
	}

	var pid int
	for _, comp := range c.Components() {
		if comp.Name == localcluster.CoreDNS {
			pid = comp.PID
		}
	}
	if pid == 0 {
		t.Fatalf("no %s among the cluster's components %v", localcluster.CoreDNS, c.Components())
	}
	c.Stop()
	assertGone(t, []int{pid}, nil)
}
