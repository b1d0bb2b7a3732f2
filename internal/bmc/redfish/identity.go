package redfish

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// One machine, one node: the controller keys a Redfish node by its
// system's @odata.id as the BMC serves it, which it learns here at
// enroll. BMCs differ in how they write ids (iLO ends every @odata.id
// with a slash, AMI calls its system Self, iDRAC System.Embedded.1) and
// operators in how they write system_id (a bare id, a full URL, a path
// without /redfish/v1): both are compared through api.SameRedfishSystem,
// and the BMC's own spelling is what the node keeps.

var _ bmc.SystemResolver = (*Client)(nil)

// shownSystems is how many of a BMC's systems an error lists.
const shownSystems = 5

// ResolveSystem returns the client's system as the BMC serves it and every
// system the BMC lists: one request (the Systems collection) when the
// system is listed or none is asked for, two when the BMC must be asked
// about a system it does not list (it may answer for an alias).
func (cl *Client) ResolveSystem(ctx context.Context) (bmc.ResolvedSystem, error) {
	var out bmc.ResolvedSystem
	err := cl.call(ctx, "resolve system", func(api *gofish.APIClient) error {
		var err error
		out, err = cl.c.resolve(api, cl.system)
		return err
	})
	out.RoundTrip = cl.c.roundTrip()
	return out, err
}

// call runs fn with a logged-in client, re-logging in once when a cached
// session is refused, and classifies the outcome. Client.run is call with
// the system found first; ResolveSystem calls it directly, since finding
// the system is what it does.
func (cl *Client) call(ctx context.Context, op string, fn func(api *gofish.APIClient) error) error {
	if err := ctx.Err(); err != nil {
		return classify(op, err, cl.c.redactor())
	}
	if cl.c.o.isClosed() {
		// A closed Opener logged out of every BMC; logging in again here
		// would leave a session behind.
		return classify(op, ErrClosed, nil)
	}
	cl.c.touch()
	api, gen, err := cl.c.client(ctx)
	if err == nil {
		err = fn(api)
		if statusOf(err) == http.StatusUnauthorized {
			switch api2, rerr := cl.c.relogin(ctx, gen); {
			case rerr == nil:
				err = fn(api2)
			case !errors.Is(rerr, errNoRelogin):
				err = rerr
			}
		}
	}
	return classify(op, err, cl.c.redactor())
}

// membersFresh is how long the systems a BMC listed answer another
// resolve that finds its system among them without asking again: an
// enroll resolves the new node's system and its verify job, moments
// later on the same connection, resolves it again. A system not among
// them, or an older list, is asked for.
const membersFresh = 3 * time.Second

// resolve finds want (a normalized path; "" for the only system) among
// the BMC's systems.
func (c *conn) resolve(gapi *gofish.APIClient, want string) (bmc.ResolvedSystem, error) {
	c.mu.Lock()
	coll := c.systems
	cached, at := c.members, c.membersAt
	c.mu.Unlock()
	if cached != nil && time.Since(at) < membersFresh {
		out := bmc.ResolvedSystem{Members: slices.Clone(cached)}
		switch {
		case want == "" && len(cached) == 1:
			out.ID = systemIDOrEmpty(cached[0])
			return out, nil
		case want != "":
			for _, m := range cached {
				if api.SameRedfishSystem(m, want) {
					out.ID = m
					return out, nil
				}
			}
		}
	}
	d, _, err := getDoc(gapi, coll)
	if err != nil {
		return bmc.ResolvedSystem{}, err
	}
	members := servedMembers(d)
	c.mu.Lock()
	c.members, c.membersAt = slices.Clone(members), time.Now()
	c.mu.Unlock()
	out := bmc.ResolvedSystem{Members: members}
	if want == "" {
		switch len(members) {
		case 0:
			return out, fmt.Errorf("%w: %s lists no systems", ErrSystemNotFound, c.endpoint+coll)
		case 1:
			out.ID = systemIDOrEmpty(members[0])
			return out, nil
		default:
			return out, fmt.Errorf("%w: it has %d (%s)", ErrSystemIDRequired, len(members), listSystems(members))
		}
	}
	for _, m := range members {
		if api.SameRedfishSystem(m, want) {
			out.ID = m
			return out, nil
		}
	}
	// Not listed: the BMC may still serve it under another name (an
	// alias such as Self), and then that name is the system's.
	sd, _, err := getDoc(gapi, want)
	switch {
	case statusOf(err) == http.StatusNotFound:
		return out, notFound(c.endpoint+want, c.endpoint+coll, members)
	case err != nil:
		return out, err
	}
	out.ID = want
	if id := systemIDOrEmpty(relPath(sd.str("@odata.id"))); id != "" {
		out.ID = id
	}
	return out, nil
}

// notFound says which URL answered 404, what the BMC lists instead, and
// what to do about it.
func notFound(url, coll string, members []string) error {
	if len(members) == 0 {
		return fmt.Errorf("%w: GET %s answered 404 Not Found, and %s lists no systems", ErrSystemNotFound, url, coll)
	}
	hint := "set bmc.system_id to one of them"
	if len(members) == 1 {
		hint = "set bmc.system_id to it, or leave system_id unset (the BMC has one system)"
	}
	return fmt.Errorf("%w: GET %s answered 404 Not Found; the BMC lists %s; %s", ErrSystemNotFound, url, listSystems(members), hint)
}

// listSystems shows the first few of a BMC's systems.
func listSystems(members []string) string {
	shown := members
	if len(shown) > shownSystems {
		shown = shown[:shownSystems]
	}
	s := strings.Join(shown, ", ")
	if more := len(members) - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// servedMembers returns a collection's member links as the BMC wrote
// them (doc.members drops trailing slashes; here they are the point).
func servedMembers(d doc) []string {
	var out []string
	for _, m := range d.arr("Members") {
		if p := linkOf(m); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// systemIDOrEmpty returns id if it reads as a Redfish system path, else
// "": a node stores the id, and one the API would refuse would make the
// node impossible to update.
func systemIDOrEmpty(id string) string {
	if _, err := api.RedfishSystemPath(id); err != nil || id == "" {
		return ""
	}
	return id
}
