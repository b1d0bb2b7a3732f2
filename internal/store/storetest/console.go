package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// testConsoleLog: one recorder per node among all holders (a lease that
// runs out goes to the next), only the holder writes, the log goes with
// its node.
func testConsoleLog(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := newNode("console")
	insertNode(t, s, n)
	if _, err := s.GetConsoleLog(ctx, n.ID); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Fatalf("console log before any recording: %v", err)
	}
	now := time.Now()
	ok, err := s.ClaimConsole(ctx, n.ID, "a", now.Add(time.Minute))
	if err != nil || !ok {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if ok, err := s.ClaimConsole(ctx, n.ID, "b", now.Add(time.Minute)); err != nil || ok {
		t.Fatalf("claim of a held console by another holder: %v %v", ok, err)
	}
	if ok, err := s.ClaimConsole(ctx, n.ID, "a", now.Add(2*time.Minute)); err != nil || !ok {
		t.Fatalf("renewal by the holder: %v %v", ok, err)
	}
	log := strings.Repeat("[    1.000000] Linux version 6.1 ünïcode\n", 1000)
	if ok, err := s.SaveConsoleLog(ctx, n.ID, "a", log, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("save by the holder: %v %v", ok, err)
	}
	if ok, err := s.SaveConsoleLog(ctx, n.ID, "b", "not mine", now.Add(time.Minute)); err != nil || ok {
		t.Fatalf("save by another holder: %v %v", ok, err)
	}
	c, err := s.GetConsoleLog(ctx, n.ID)
	if err != nil || c.Log != log || c.Holder != "a" || !c.Recording(time.Now()) {
		t.Fatalf("console log: %v holder %q recording %v, %d bytes", err, c.Holder, c.Recording(time.Now()), len(c.Log))
	}
	if err := s.ReleaseConsole(ctx, n.ID, "b"); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.GetConsoleLog(ctx, n.ID); c.Holder != "a" {
		t.Fatalf("another holder released the lease")
	}
	if err := s.ReleaseConsole(ctx, n.ID, "a"); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.GetConsoleLog(ctx, n.ID); c.Recording(time.Now()) || c.Log != log {
		t.Fatalf("after release: holder %q, log kept %v", c.Holder, c.Log == log)
	}
	// A lease that ran out (its holder died) goes to the next claimant,
	// and the log stays.
	if ok, _ := s.ClaimConsole(ctx, n.ID, "c", now.Add(-time.Second)); !ok {
		t.Fatal("claim of a released console")
	}
	if ok, err := s.ClaimConsole(ctx, n.ID, "d", now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("claim of a lease that ran out: %v %v", ok, err)
	}
	if c, _ := s.GetConsoleLog(ctx, n.ID); c.Holder != "d" || c.Log != log {
		t.Fatalf("after takeover: holder %q, log kept %v", c.Holder, c.Log == log)
	}
	if _, err := s.ClaimConsole(ctx, "no-such-node", "a", now.Add(time.Minute)); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Fatalf("claim for a missing node: %v", err)
	}
	got := getNode(t, s, n.ID)
	must(t, s.DeleteNode(ctx, n.ID, got.Version))
	if _, err := s.GetConsoleLog(ctx, n.ID); !baremetal.IsCode(err, baremetal.CodeNotFound) {
		t.Fatalf("console log after the node was deleted: %v", err)
	}
}
