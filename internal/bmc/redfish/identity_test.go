package redfish

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

func resolve(t *testing.T, c *Client) bmc.ResolvedSystem {
	t.Helper()
	res, err := c.ResolveSystem(context.Background())
	if err != nil {
		t.Fatalf("ResolveSystem(%q): %v", c.system, err)
	}
	return res
}

// Every spelling of a system resolves to the @odata.id the BMC serves:
// iLO's trailing slash included, and the BMC's only system when none is
// named.
func TestResolveSystem(t *testing.T) {
	for _, slash := range []bool{false, true} {
		f := startFleet(t, sim.Options{IDs: []string{"1"}, TrailingSlashIDs: slash})
		o := newOpener(t, Options{})
		want := "/redfish/v1/Systems/1"
		if slash {
			want += "/"
		}
		u := strings.Replace(f.URL(), "127.0.0.1", "LOCALHOST", 1)
		for _, id := range []string{"", "1", "Systems/1", "/Systems/1/", "/redfish/v1/Systems/1", "/redfish/v1/Systems/1/",
			u + "/redfish/v1/Systems/1/"} {
			res := resolve(t, open(t, o, endpoint(f.URL(), id)))
			if res.ID != want || !slices.Equal(res.Members, []string{want}) {
				t.Errorf("slash %v, system_id %q: resolved %+v, want %s", slash, id, res, want)
			}
		}
	}
}

// A system the BMC does not have: the error names the URL tried, the
// systems the BMC lists, and what to set. Several systems and none named:
// the existing "set system_id" error, listing them.
func TestResolveSystemErrors(t *testing.T) {
	f := startFleet(t, sim.Options{IDs: []string{"a", "b", "c", "d", "e", "f", "g"}})
	o := newOpener(t, Options{})
	ctx := context.Background()

	_, err := open(t, o, endpoint(f.URL(), "/redfish/v1/Systems/1")).ResolveSystem(ctx)
	wantKind(t, err, bmc.KindBMCError)
	msg := err.Error()
	if !errors.Is(err, bmc.ErrSystemNotFound) || !strings.Contains(msg, f.URL()+"/redfish/v1/Systems/1 answered 404") ||
		!strings.Contains(msg, "/redfish/v1/Systems/a, /redfish/v1/Systems/b") || !strings.Contains(msg, "and 2 more") ||
		!strings.Contains(msg, "set bmc.system_id to one of them") {
		t.Fatalf("a missing system: %v", err)
	}

	_, err = open(t, o, endpoint(f.URL(), "")).ResolveSystem(ctx)
	wantKind(t, err, bmc.KindBMCError)
	if !errors.Is(err, bmc.ErrSystemIDRequired) || !strings.Contains(err.Error(), "it has 7 (/redfish/v1/Systems/a") {
		t.Fatalf("several systems, none named: %v", err)
	}

	one := startFleet(t, sim.Options{IDs: []string{"System.Embedded.1"}, TrailingSlashIDs: true})
	_, err = open(t, o, endpoint(one.URL(), "1")).ResolveSystem(ctx)
	if !errors.Is(err, bmc.ErrSystemNotFound) || !strings.Contains(err.Error(), "the BMC lists /redfish/v1/Systems/System.Embedded.1/;") ||
		!strings.Contains(err.Error(), "or leave system_id unset") {
		t.Fatalf("a missing system on a BMC with one: %v", err)
	}
}

// A BMC that answers for a system it does not list (an alias) names it
// in the answer's @odata.id: that name is the system's.
func TestResolveSystemAlias(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimSuffix(r.URL.Path, "/") {
		case "/redfish/v1":
			_, _ = w.Write([]byte(`{"Systems":{"@odata.id":"/redfish/v1/Systems"}}`))
		case "/redfish/v1/Systems":
			_, _ = w.Write([]byte(`{"Members":[{"@odata.id":"/redfish/v1/Systems/1"}]}`))
		case "/redfish/v1/Systems/Self", "/redfish/v1/Systems/1":
			_, _ = w.Write([]byte(`{"@odata.id":"/redfish/v1/Systems/1","PowerState":"On"}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	o := newOpener(t, Options{})
	if res := resolve(t, open(t, o, endpoint(srv.URL, "Self"))); res.ID != "/redfish/v1/Systems/1" {
		t.Fatalf("alias resolved to %+v", res)
	}
}

// A node keyed by iLO's spelling of its system (the stored system_id)
// reaches that system for every call.
func TestTrailingSlashSystemWorks(t *testing.T) {
	f := startFleet(t, sim.Options{IDs: []string{"1"}, TrailingSlashIDs: true})
	o := newOpener(t, Options{})
	ctx := context.Background()
	c := open(t, o, endpoint(f.URL(), "/redfish/v1/Systems/1/"))
	mustPower(t, c, bmc.PowerOff)
	if err := c.SetPower(ctx, bmc.ActionOn); err != nil {
		t.Fatal(err)
	}
	if err := c.SetBootDevice(ctx, bmc.BootPXE, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Inventory(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.InsertMedia(ctx, "http://images.example/a.iso"); err != nil {
		t.Fatal(err)
	}
	if err := c.EjectMedia(ctx); err != nil {
		t.Fatal(err)
	}
}

// A resolve moments after another on the same connection (an enroll's,
// then its verify job's) finds its system among the systems listed then,
// without reading the collection again; a system not among them, or a
// list older than membersFresh, is read again, and a system the BMC no
// longer lists is not found.
func TestResolveSystemReusesFreshMembers(t *testing.T) {
	var mu sync.Mutex
	members, reads := []string{"1"}, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch strings.TrimSuffix(r.URL.Path, "/") {
		case "/redfish/v1":
			_, _ = w.Write([]byte(`{"Systems":{"@odata.id":"/redfish/v1/Systems"}}`))
		case "/redfish/v1/Systems":
			reads++
			var ms []string
			for _, m := range members {
				ms = append(ms, `{"@odata.id":"/redfish/v1/Systems/`+m+`"}`)
			}
			_, _ = w.Write([]byte(`{"Members":[` + strings.Join(ms, ",") + `]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	o := newOpener(t, Options{})
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return reads
	}
	if res := resolve(t, open(t, o, endpoint(srv.URL, "1"))); res.ID != "/redfish/v1/Systems/1" || count() != 1 {
		t.Fatalf("first resolve: %+v, %d reads", res, count())
	}
	for _, id := range []string{"1", "/redfish/v1/Systems/1", ""} {
		if res := resolve(t, open(t, o, endpoint(srv.URL, id))); res.ID != "/redfish/v1/Systems/1" ||
			!slices.Equal(res.Members, []string{"/redfish/v1/Systems/1"}) || count() != 1 {
			t.Fatalf("resolve %q again: %+v, %d reads, want 1", id, res, count())
		}
	}
	// A system added since: not among the list, so read again.
	mu.Lock()
	members = []string{"1", "2"}
	mu.Unlock()
	if res := resolve(t, open(t, o, endpoint(srv.URL, "2"))); res.ID != "/redfish/v1/Systems/2" || count() != 2 {
		t.Fatalf("resolve of a new system: %+v, %d reads, want 2", res, count())
	}
	// The only system, now that there are two, is asked for.
	if _, err := open(t, o, endpoint(srv.URL, "")).ResolveSystem(context.Background()); !errors.Is(err, bmc.ErrSystemIDRequired) {
		t.Fatalf("resolve of the only system of two: %v", err)
	}
	// A system gone: found among a fresh list, not among an old one.
	mu.Lock()
	members = []string{"2"}
	mu.Unlock()
	c := open(t, o, endpoint(srv.URL, "1"))
	c.c.mu.Lock()
	c.c.membersAt = c.c.membersAt.Add(-membersFresh)
	c.c.mu.Unlock()
	if _, err := c.ResolveSystem(context.Background()); !errors.Is(err, bmc.ErrSystemNotFound) {
		t.Fatalf("resolve of a system gone, after the list went stale: %v", err)
	}
}
