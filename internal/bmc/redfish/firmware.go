package redfish

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// Firmware updates (issue 30): the UpdateService the service root links,
// its FirmwareInventory and its #UpdateService.SimpleUpdate action.
//
// Read with doc, leniently, as the rest of the driver reads: gofish's
// typed SoftwareInventory fails a whole entry for one mistyped field, and
// its UpdateService.SimpleUpdate (v0.26.0) returns only an error, so the
// task monitor of a 202 is lost (gofish#494, changed in a later release).
//
// What BMCs do differently (the simulator's UpdateQuirks model them):
//
//   - A service with several systems lists every system's firmware in one
//     inventory; entries say whose they are with RelatedItem (the Bios,
//     the System, the Manager). Entries related only to other systems or
//     to Managers that do not manage this one are left out; entries that
//     say nothing, or name a Chassis, are kept (a one-system BMC).
//   - iDRAC's entry ids hold the version (Installed-159-2.1.0), so an id
//     read before an update is gone after it.
//   - sushy-tools links a FirmwareInventory it does not serve; its BIOS
//     version is the ComputerSystem's BiosVersion, and SimpleUpdate wants
//     the System as its target. Firmware then reports that one entry, with
//     the System's path as its id.
//   - TransferProtocol is sent only when the action lists allowable values
//     and the image URI's scheme is one of them: the schema says the
//     scheme in ImageURI wins, and a BMC that lists HTTP only (iDRAC
//     before 5.00) refuses an HTTPS one either way.
//   - The answer: 202 with a task monitor (Location, or a Task in the
//     body), or 200/204 when the BMC finished (or, iLO with an image it
//     cannot process, did nothing: callers read the inventory back).

var _ bmc.FirmwareUpdater = (*Client)(nil)

// maxInventory bounds the inventory entries read.
const maxInventory = 256

// transferProtocols are the UpdateService's TransferProtocol values.
var transferProtocols = []string{"CIFS", "FTP", "SFTP", "HTTP", "HTTPS", "NSF", "NFS", "SCP", "TFTP", "OEM"}

// updateService reads the UpdateService the service root links; none is
// KindUnsupported.
func updateService(api *gofish.APIClient, op string) (string, doc, error) {
	root, _, err := getDoc(api, "/redfish/v1/")
	if err != nil {
		return "", nil, fmt.Errorf("reading the service root: %w", reduce(err))
	}
	p := root.link("UpdateService")
	if p == "" {
		return "", nil, bmc.Errorf(bmc.KindUnsupported, op, "the BMC has no UpdateService: no firmware updates (UpdateService) over Redfish")
	}
	d, _, err := getDoc(api, p)
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			return "", nil, bmc.Errorf(bmc.KindUnsupported, op, "the BMC links its UpdateService %s and does not serve it (404): no firmware updates (UpdateService)", p)
		}
		return "", nil, fmt.Errorf("reading the UpdateService %s: %w", p, reduce(err))
	}
	return p, d, nil
}

// Firmware reads the firmware inventory entries of the client's system.
func (cl *Client) Firmware(ctx context.Context) ([]bmc.FirmwareComponent, error) {
	const op = "read firmware inventory"
	var out []bmc.FirmwareComponent
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		s, err := getSystem(api, sys)
		if err != nil {
			return err
		}
		usPath, us, err := updateService(api, op)
		if err != nil {
			return err
		}
		inv := us.link("FirmwareInventory")
		var members []string
		if inv != "" {
			d, _, err := getDoc(api, inv)
			switch {
			case statusOf(err) == http.StatusNotFound:
				inv = ""
			case err != nil:
				return fmt.Errorf("reading the FirmwareInventory %s: %w", inv, reduce(err))
			default:
				members = d.members()
			}
		}
		if inv == "" {
			return systemBIOSOnly(api, s, us, usPath, op, &out)
		}
		if len(members) > maxInventory {
			members = members[:maxInventory]
		}
		out = make([]bmc.FirmwareComponent, 0, len(members))
		for _, m := range members {
			e, _, err := getDoc(api, m)
			if statusOf(err) == http.StatusNotFound {
				continue // gone since the collection was read (iDRAC renames entries)
			}
			if err != nil {
				return fmt.Errorf("reading the firmware inventory entry %s: %w", m, reduce(err))
			}
			var related []string
			for _, r := range e.arr("RelatedItem") {
				if p := linkOf(r); p != "" {
					related = append(related, p)
				}
			}
			if !relatedTo(related, s) {
				continue
			}
			upd, _ := e.boolean("Updateable")
			name := e.str("Name")
			if name == "" {
				name = e.str("Id")
			}
			out = append(out, bmc.FirmwareComponent{ID: m, Name: name, Version: e.str("Version"), Updateable: upd})
		}
		return nil
	})
	return out, err
}

// systemBIOSOnly is the inventory of a BMC that serves none (sushy-tools):
// the system's BiosVersion, with the System as the entry, or
// KindUnsupported.
func systemBIOSOnly(api *gofish.APIClient, s *system, us doc, usPath, op string, out *[]bmc.FirmwareComponent) error {
	d, _, err := getDoc(api, s.Path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", s.Path, reduce(err))
	}
	v := d.str("BiosVersion")
	if v == "" {
		return bmc.Errorf(bmc.KindUnsupported, op, "the UpdateService %s serves no FirmwareInventory and system %s reports no BiosVersion", usPath, s.Path)
	}
	updateable := us.obj("Actions").obj("#UpdateService.SimpleUpdate").str("target") != ""
	*out = []bmc.FirmwareComponent{{ID: strings.TrimSuffix(s.Path, "/"), Name: "BIOS", Version: v, Updateable: updateable}}
	return nil
}

// relatedTo reports whether an inventory entry related to these
// resources is the firmware of system s (see the file's comment).
func relatedTo(related []string, s *system) bool {
	if len(related) == 0 {
		return true
	}
	under := func(p, base string) bool {
		p, base = strings.ToLower(strings.TrimSuffix(p, "/")), strings.ToLower(strings.TrimSuffix(base, "/"))
		return p == base || strings.HasPrefix(p, base+"/")
	}
	for _, r := range related {
		switch {
		case under(r, s.Path):
			return true
		case under(r, "/redfish/v1/Systems"):
			// Another system's.
		case under(r, "/redfish/v1/Managers"):
			for _, m := range s.ManagedBy {
				if under(r, m) {
					return true
				}
			}
		default:
			return true // a Chassis, a device: not another system's
		}
	}
	return false
}

// SimpleUpdate asks the BMC to fetch imageURI and apply it to targets
// (empty: the BMC decides from the image) and returns the task doing it
// (Monitor "" when the BMC answered 200 or 204: done, or, on some BMCs,
// nothing done; the caller reads the inventory back either way). A 400
// is KindRefused naming the parameters the BMC's messages name.
func (cl *Client) SimpleUpdate(ctx context.Context, imageURI string, targets []string) (bmc.Task, error) {
	const op = "firmware update"
	if err := checkImageURL(op, imageURI); err != nil {
		return bmc.Task{}, err
	}
	var task bmc.Task
	err := cl.run(ctx, op, func(api *gofish.APIClient, _ string) error {
		_, us, err := updateService(api, op)
		if err != nil {
			return err
		}
		action := us.obj("Actions").obj("#UpdateService.SimpleUpdate")
		target := relPath(action.str("target"))
		if target == "" {
			return bmc.Errorf(bmc.KindUnsupported, op, "the BMC's UpdateService has no SimpleUpdate action: no firmware updates (UpdateService)")
		}
		payload := map[string]any{"ImageURI": imageURI}
		if len(targets) > 0 {
			payload["Targets"] = targets
		}
		if p := transferProtocol(allowableValues(api, action, "TransferProtocol", transferProtocols), imageURI); p != "" {
			payload["TransferProtocol"] = p
		}
		resp, err := api.Post(target, payload)
		defer schemas.DeferredCleanupHTTPResponse(resp)
		if err != nil {
			if statusOf(err) == http.StatusBadRequest {
				return refusedUpdate(err, imageURI, cl.c.redactor())
			}
			return fmt.Errorf("asking for the firmware update from %s: %w", describeImage(imageURI), reduce(err))
		}
		task.Monitor = updateMonitor(resp)
		return nil
	})
	return task, err
}

// transferProtocol is the allowed value that is the image URI's scheme
// ("" when the BMC lists none, or not that one).
func transferProtocol(allowed []string, imageURI string) string {
	u, err := url.Parse(imageURI)
	if err != nil || u.Scheme == "" {
		return ""
	}
	for _, a := range allowed {
		if strings.EqualFold(a, u.Scheme) {
			return a
		}
	}
	return ""
}

// updateMonitor is the task monitor of a SimpleUpdate's answer: a 202's
// Location, else the monitor (or the @odata.id) of a Task in the body;
// "" for a 204, or a 200 without a Task.
func updateMonitor(resp *http.Response) string {
	if resp == nil || resp.StatusCode == http.StatusNoContent {
		return ""
	}
	if resp.StatusCode == http.StatusAccepted {
		if m := relPath(resp.Header.Get("Location")); m != "" {
			return m
		}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDoc))
	if err != nil || len(body) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	t := doc(m)
	if mon := relPath(t.str("TaskMonitor")); mon != "" {
		return mon
	}
	if strings.Contains(t.str("@odata.type"), "#Task.") || resp.StatusCode == http.StatusAccepted {
		return relPath(t.str("@odata.id"))
	}
	return ""
}

// refusedUpdate is the error of a 400 to SimpleUpdate: the parameters
// the BMC's messages name (sent or missing: sushy-tools answers "Missing
// ImageURI and/or Targets."), the image (host and file name), and the
// BMC's messages.
func refusedUpdate(err error, imageURI string, secrets *redact.Secrets) error {
	he, _ := asHTTPError(err, secrets)
	msg := he.Error()
	var named []string
	for _, p := range []string{"ImageURI", "Targets", "TransferProtocol"} {
		if strings.Contains(msg, p) {
			named = append(named, p)
		}
	}
	what := "the request"
	if len(named) > 0 {
		what = strings.Join(named, ", ")
	}
	return &bmc.Error{Kind: bmc.KindRefused, Op: "firmware update",
		Err: fmt.Errorf("the BMC refused %s of the firmware update from %s: %w", what, describeImage(imageURI), he)}
}
