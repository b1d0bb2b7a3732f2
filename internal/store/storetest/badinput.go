package storetest

import (
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
)

// BadKeys are lookup keys and filter values that clients can send (path
// ids, query parameters) and no stored row can hold: NUL and invalid
// UTF-8 (which PostgreSQL's text refuses outright), path tricks, SQL and
// LIKE metacharacters, and an oversized key (larger than a PostgreSQL
// index entry may be). The HTTP API tests send the same set.
var BadKeys = []string{
	"a\x00b",
	"\x00",
	"\xff\xfe",
	"caf\xc3",
	"../x",
	"%",
	"_",
	"' OR '1'='1",
	"\u202e",
	strings.Repeat("k", 10000),
}

// testBadLookups: every lookup and filter fed a bad key answers the way a
// key that matches nothing does (not found, an empty list, a quota that
// is not set) on every store; none of them is an internal error.
func testBadLookups(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := insertNode(t, s, newNode("keep"))
	inst := newInstance("proj-a", "keep")
	inst.NodeID = n.ID
	must(t, s.InsertInstance(ctx, inst))
	must(t, s.InsertEvent(ctx, &baremetal.Event{NodeID: n.ID, Type: "x"}))

	for _, k := range BadKeys {
		name := k
		if len(name) > 20 {
			name = name[:20] + "…"
		}
		notFound := func(what string, err error) {
			t.Helper()
			if baremetal.ErrorCode(err) != baremetal.CodeNotFound {
				t.Errorf("%s(%q): %v, want not found", what, name, err)
			}
		}
		empty := func(what string, n int, err error) {
			t.Helper()
			if err != nil || n != 0 {
				t.Errorf("%s(%q): %d items, %v; want an empty list", what, name, n, err)
			}
		}
		_, err := s.GetNode(ctx, k)
		notFound("GetNode", err)
		notFound("DeleteNode", s.DeleteNode(ctx, k, 1))
		_, err = s.GetInstance(ctx, k)
		notFound("GetInstance", err)
		notFound("DeleteInstance", s.DeleteInstance(ctx, k, 1))
		_, err = s.GetToken(ctx, k)
		notFound("GetToken", err)
		_, err = s.GetTokenByHash(ctx, k)
		notFound("GetTokenByHash", err)
		notFound("DeleteToken", s.DeleteToken(ctx, k))
		// Inside a transaction too: on PostgreSQL a failed statement
		// would abort the whole transaction.
		err = s.InTx(ctx, func(tx store.Tx) error {
			_, err := tx.GetNodeForUpdate(ctx, k)
			notFound("tx.GetNodeForUpdate", err)
			_, err = tx.GetNode(ctx, n.ID)
			return err
		})
		must(t, err)

		evs, _, err := s.ListEvents(ctx, k, store.Page{})
		empty("ListEvents", len(evs), err)
		for _, f := range []store.NodeFilter{{ResourceClass: k}, {Fault: k}, {ProvisionState: baremetal.ProvisionState(k)}} {
			nodes, _, err := s.ListNodes(ctx, f)
			empty("ListNodes", len(nodes), err)
		}
		for _, f := range []store.InstanceFilter{{Project: k}, {Name: k}, {NodeID: k}} {
			list, _, err := s.ListInstances(ctx, f)
			empty("ListInstances", len(list), err)
		}
		c, err := s.CountInstances(ctx, k)
		empty("CountInstances", c, err)
		q, err := s.GetQuota(ctx, k)
		if err != nil || q.Instances != -1 {
			t.Errorf("GetQuota(%q) = %+v, %v; want an unset quota", name, q, err)
		}

		// A cursor made from the key was never handed out by a store.
		cur := store.EncodeCursor(k)
		_, _, err = s.ListNodes(ctx, store.NodeFilter{Page: store.Page{After: cur}})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
		_, _, err = s.ListInstances(ctx, store.InstanceFilter{Page: store.Page{After: cur}})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
		_, _, err = s.ListTokens(ctx, store.Page{After: cur})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
		_, _, err = s.ListEvents(ctx, n.ID, store.Page{After: cur})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
	}
	// Well-formed base64 of a key that is not an id: refused, not an
	// empty (or arbitrary) page.
	for _, key := range []string{"zzz", strings.ToUpper(n.ID), "{" + n.ID + "}"} {
		_, _, err := s.ListNodes(ctx, store.NodeFilter{Page: store.Page{After: store.EncodeCursor(key)}})
		wantCode(t, err, baremetal.CodeInvalid, "cursor")
	}
	// Nothing above changed anything.
	same(t, "node", n, getNode(t, s, n.ID))
	got, err := s.GetInstance(ctx, inst.ID)
	must(t, err)
	same(t, "instance", inst, got)
}

// testDomainLimits stores the largest values the domain allows and reads
// them back unchanged: a column narrower than a domain range (say, an
// int32 column under a range that exceeds it) fails here, on the store
// that has it, instead of as a 500 in production.
func testDomainLimits(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	n := newNode("limits")
	n.Properties = baremetal.Properties{CPUs: baremetal.MaxCPUs, MemoryMB: baremetal.MaxMemoryMB, LocalGB: baremetal.MaxLocalGB,
		CPUArch: strings.Repeat("a", 32)}
	n.MaintenanceReason, n.Maintenance = strings.Repeat("é", 512), true
	if err := n.Validate(); err != nil {
		t.Fatalf("the fixture is not a valid node: %v", err)
	}
	insertNode(t, s, n)
	same(t, "node at the domain's limits", n, getNode(t, s, n.ID))

	inst := newInstance("proj-a", "limits")
	inst.Image.Checksum = "sha256:" + strings.Repeat("ab", 32)
	// Free text keeps its newlines, tabs and other control characters;
	// only NUL is refused (by the domain).
	inst.UserData = "#!/bin/sh\n\techo \x1b[1mhi\x1b[0m\r\n"
	inst.UserData += strings.Repeat("x", baremetal.MaxUserData-len(inst.UserData))
	inst.Metadata = map[string]string{"ssh-keys": "ssh-ed25519 AAAA a\nssh-ed25519 BBBB b\n", "emoji": "🚀\u00a0✓"}
	if err := inst.Validate(); err != nil {
		t.Fatalf("the fixture is not a valid instance: %v", err)
	}
	must(t, s.InsertInstance(ctx, inst))
	got, err := s.GetInstance(ctx, inst.ID)
	must(t, err)
	same(t, "instance at the domain's limits", inst, got)

	for _, v := range []int{baremetal.MaxQuotaInstances, -1, 0} {
		q := &baremetal.Quota{Project: "proj-a", Instances: v}
		if err := q.Validate(); err != nil {
			t.Fatalf("the fixture is not a valid quota: %v", err)
		}
		must(t, s.SetQuota(ctx, q))
		back, err := s.GetQuota(ctx, "proj-a")
		must(t, err)
		if back.Instances != v {
			t.Errorf("quota %d read back as %d", v, back.Instances)
		}
	}
}
