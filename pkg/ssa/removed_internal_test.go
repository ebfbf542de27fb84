package ssa

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A value the server makes from the object's name or uid (the twin of
// serverKeeps has a generated name) reads as the live object's.
func TestAsLiveReadsTheTwinsNameAsLive(t *testing.T) {
	live, fresh := &unstructured.Unstructured{}, &unstructured.Unstructured{}
	live.SetName("shop")
	live.SetUID("11111111-aaaa")
	fresh.SetName("shop-x7k2p")
	fresh.SetUID("22222222-bbbb")
	got := asLive(map[string]any{"host": "shop-x7k2p.svc", "owner": "22222222-bbbb", "n": float64(3)}, fresh, live)
	want := map[string]any{"host": "shop.svc", "owner": "11111111-aaaa", "n": float64(3)}
	if !sameJSON(got, want) {
		t.Errorf("asLive = %v, want %v", got, want)
	}
}
