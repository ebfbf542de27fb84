package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestACopyTheControllersOwnWriteSupersededIsStaleUntilANewerOneIsRead(t *testing.T) {
	var s staleCopies
	key := types.NamespacedName{Namespace: "argocd", Name: "guestbook"}
	if s.stale(key, "10") {
		t.Fatal("nothing written yet, yet stale")
	}
	s.superseded(key, "10", "11")
	for _, rv := range []string{"10", "11"} {
		if !s.stale(key, rv) {
			t.Errorf("rv %s superseded by the write, not stale", rv)
		}
	}
	if s.stale(key, "12") {
		t.Error("the written copy is stale")
	}
	if s.stale(key, "10") {
		t.Error("still stale after a newer copy was read")
	}
	var none *staleCopies
	none.superseded(key, "1")
	if none.stale(key, "1") {
		t.Error("a nil staleCopies reports stale")
	}
}
