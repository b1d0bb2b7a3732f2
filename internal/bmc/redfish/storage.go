package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// RAID (issue 30): the system's Storage resources, their drives and
// volumes (bmc.RAIDController). Read with doc, leniently, as the system
// is: gofish's schemas.Storage, Drive and Volume decode a whole resource
// or fail on one mistyped field, and BMCs write volumes differently
// (RAIDType, or only the older VolumeType: sushy-tools, older iDRAC).
//
// A volume is created by POST to the Storage's Volumes collection with
// Name, RAIDType, Links.Drives and CapacityBytes (when one is asked for),
// and @Redfish.OperationApplyTime Immediate where the collection lists it
// (iDRAC otherwise stages the job until a reset). An answer of 202 is a
// task, returned for the caller to follow (TaskStatus); any other 2xx is
// read back, never trusted: the volume must show, with the RAID type and
// drives asked for, or the call is KindRefused (sushy-tools answers 201
// and ignores RAIDType and the drives). A 400 is KindRefused naming the
// properties the BMC's messages name. DELETE likewise.

var _ bmc.RAIDController = (*Client)(nil)

// volumeTypes maps the older Volume.VolumeType to RAIDType.
var volumeTypes = map[string]string{
	"NonRedundant": "RAID0", "Mirrored": "RAID1", "StripedWithParity": "RAID5", "SpannedMirrors": "RAID10",
}

// Storage reads every Storage resource of the system with its drives
// and volumes.
func (cl *Client) Storage(ctx context.Context) ([]bmc.StorageController, error) {
	const op = "read storage"
	var out []bmc.StorageController
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		coll, err := storageCollection(api, sys, op)
		if err != nil {
			return err
		}
		out = nil
		for _, m := range coll.members() {
			sc, err := readController(api, m)
			if err != nil {
				return err
			}
			out = append(out, sc)
		}
		return nil
	})
	return out, err
}

// storageCollection reads the system's Storage collection; a system
// without one is KindUnsupported.
func storageCollection(api *gofish.APIClient, sys, op string) (doc, error) {
	d, _, err := getDoc(api, sys)
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %s", ErrSystemNotFound, sys)
		}
		return nil, err
	}
	link := d.link("Storage")
	if link == "" {
		return nil, bmc.Errorf(bmc.KindUnsupported, op, "system %s has no Storage resource: the BMC offers no RAID (Storage volumes) over Redfish", sys)
	}
	coll, _, err := getDoc(api, link)
	if err != nil {
		if st := statusOf(err); st == http.StatusNotFound || st == http.StatusNotImplemented {
			return nil, bmc.Errorf(bmc.KindUnsupported, op, "system %s links its Storage %s, which the BMC does not serve (%d)", sys, link, st)
		}
		return nil, fmt.Errorf("reading the Storage collection %s: %w", link, reduce(err))
	}
	return coll, nil
}

// readController reads one Storage resource, its drives and volumes.
func readController(api *gofish.APIClient, path string) (bmc.StorageController, error) {
	d, _, err := getDoc(api, path)
	if err != nil {
		return bmc.StorageController{}, fmt.Errorf("reading the Storage %s: %w", path, reduce(err))
	}
	sc := bmc.StorageController{ID: path, Name: d.str("Name")}
	for _, c := range d.arr("StorageControllers") {
		cd, _ := c.(map[string]any)
		for _, t := range doc(cd).strs("SupportedRAIDTypes") {
			if !slices.Contains(sc.RAIDTypes, t) {
				sc.RAIDTypes = append(sc.RAIDTypes, t)
			}
		}
	}
	if len(sc.RAIDTypes) == 0 {
		// Storage v1.15 moved the controllers to their own collection.
		if cl := d.link("Controllers"); cl != "" {
			if cd, _, err := getDoc(api, cl); err == nil {
				for _, m := range cd.members() {
					if c, _, err := getDoc(api, m); err == nil {
						for _, t := range c.strs("SupportedRAIDTypes") {
							if !slices.Contains(sc.RAIDTypes, t) {
								sc.RAIDTypes = append(sc.RAIDTypes, t)
							}
						}
					}
				}
			}
		}
	}
	for _, l := range d.arr("Drives") {
		p := strings.TrimSuffix(linkOf(l), "/")
		if p == "" {
			continue
		}
		dd, _, err := getDoc(api, p)
		if err != nil {
			return bmc.StorageController{}, fmt.Errorf("reading the drive %s: %w", p, reduce(err))
		}
		sc.Drives = append(sc.Drives, bmc.Drive{ID: p, Name: dd.str("Name"), MediaType: dd.str("MediaType"),
			Protocol: dd.str("Protocol"), CapacityBytes: int64(dd.num("CapacityBytes"))})
	}
	if vl := d.link("Volumes"); vl != "" {
		vd, _, err := getDoc(api, vl)
		if err != nil {
			return bmc.StorageController{}, fmt.Errorf("reading the volumes %s: %w", vl, reduce(err))
		}
		for _, m := range vd.members() {
			v, err := readVolume(api, m)
			if err != nil {
				return bmc.StorageController{}, err
			}
			sc.Volumes = append(sc.Volumes, v)
		}
	}
	return sc, nil
}

func readVolume(api *gofish.APIClient, path string) (bmc.Volume, error) {
	d, _, err := getDoc(api, path)
	if err != nil {
		return bmc.Volume{}, fmt.Errorf("reading the volume %s: %w", path, reduce(err))
	}
	return volumeOf(path, d), nil
}

func volumeOf(path string, d doc) bmc.Volume {
	v := bmc.Volume{ID: strings.TrimSuffix(path, "/"), Name: d.str("Name"), RAIDType: d.str("RAIDType"),
		CapacityBytes: int64(d.num("CapacityBytes"))}
	if v.RAIDType == "" {
		v.RAIDType = volumeTypes[d.str("VolumeType")]
	}
	for _, l := range d.obj("Links").arr("Drives") {
		if p := strings.TrimSuffix(linkOf(l), "/"); p != "" {
			v.Drives = append(v.Drives, p)
		}
	}
	return v
}

// volumesOf reads a Storage resource's Volumes collection: its path,
// the apply times it supports, and its members.
func volumesOf(api *gofish.APIClient, storageID, op string) (string, []string, []string, error) {
	d, _, err := getDoc(api, storageID)
	if err != nil {
		if statusOf(err) == http.StatusNotFound {
			return "", nil, nil, &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("the BMC has no Storage %s (404)", storageID)}
		}
		return "", nil, nil, fmt.Errorf("reading the Storage %s: %w", storageID, reduce(err))
	}
	vl := d.link("Volumes")
	if vl == "" {
		return "", nil, nil, bmc.Errorf(bmc.KindUnsupported, op, "the Storage %s has no Volumes collection: the BMC offers no RAID volumes there over Redfish", storageID)
	}
	vd, _, err := getDoc(api, vl)
	if err != nil {
		return "", nil, nil, fmt.Errorf("reading the volumes %s: %w", vl, reduce(err))
	}
	return vl, vd.obj("@Redfish.OperationApplyTimeSupport").strs("SupportedValues"), vd.members(), nil
}

// CreateVolume POSTs the volume to the Storage's Volumes collection.
func (cl *Client) CreateVolume(ctx context.Context, storageID string, spec bmc.VolumeSpec) (bmc.Task, error) {
	const op = "create volume"
	if spec.RAIDType == "" || len(spec.Drives) == 0 {
		return bmc.Task{}, &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: errors.New("a volume needs a RAID type and drives")}
	}
	var task bmc.Task
	err := cl.run(ctx, op, func(api *gofish.APIClient, _ string) error {
		vl, applyTimes, before, err := volumesOf(api, relPath(storageID), op)
		if err != nil {
			return err
		}
		drives := make([]any, len(spec.Drives))
		for i, d := range spec.Drives {
			drives[i] = map[string]any{"@odata.id": d}
		}
		payload := map[string]any{"RAIDType": spec.RAIDType, "Links": map[string]any{"Drives": drives}}
		if spec.Name != "" {
			payload["Name"] = spec.Name
		}
		if spec.CapacityBytes > 0 {
			payload["CapacityBytes"] = spec.CapacityBytes
		}
		if containsFold(applyTimes, "Immediate") {
			payload["@Redfish.OperationApplyTime"] = "Immediate"
		}
		resp, err := api.Post(vl, payload)
		defer schemas.DeferredCleanupHTTPResponse(resp)
		if err != nil {
			return volumeError(op, err, fmt.Sprintf("the volume %s (%s of %s) in %s", orNone(spec.Name), spec.RAIDType, strings.Join(spec.Drives, ", "), vl), cl.c.redactor())
		}
		if mon := monitorOf(resp); mon != "" {
			task = bmc.Task{Monitor: mon}
			return nil
		}
		// Done, says the BMC: read it back.
		return verifyCreated(api, vl, relPath(resp.Header.Get("Location")), before, spec, resp.StatusCode)
	})
	return task, err
}

// monitorOf is the task monitor of a 202 answer: its Location, else the
// Task in the body; "" for other answers (and a 202 naming none).
func monitorOf(resp *http.Response) string {
	if resp == nil || resp.StatusCode != http.StatusAccepted {
		return ""
	}
	if l := relPath(resp.Header.Get("Location")); l != "" {
		return l
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDoc))
	if err != nil || len(body) == 0 {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	if l := relPath(doc(m).str("TaskMonitor")); l != "" {
		return l
	}
	return relPath(doc(m).str("@odata.id"))
}

// verifyCreated reads back a volume the BMC said it created: at its
// Location, else the new member of the collection (named as asked).
func verifyCreated(api *gofish.APIClient, vl, location string, before []string, spec bmc.VolumeSpec, status int) error {
	const op = "create volume"
	var got *bmc.Volume
	if location != "" {
		if d, _, err := getDoc(api, location); err == nil {
			v := volumeOf(location, d)
			got = &v
		} else if statusOf(err) != http.StatusNotFound {
			return fmt.Errorf("reading the new volume %s back: %w", location, reduce(err))
		}
	}
	if got == nil {
		d, _, err := getDoc(api, vl)
		if err != nil {
			return fmt.Errorf("reading the volumes %s back: %w", vl, reduce(err))
		}
		for _, m := range d.members() {
			if slices.Contains(before, m) {
				continue
			}
			v, err := readVolume(api, m)
			if err != nil {
				return err
			}
			if spec.Name == "" || v.Name == spec.Name {
				got = &v
				break
			}
		}
	}
	if got == nil {
		return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("%w: the BMC answered %d to the volume %s (%s of %s) and shows no such volume in %s",
			errNotApplied, status, orNone(spec.Name), spec.RAIDType, strings.Join(spec.Drives, ", "), vl)}
	}
	var wrong []string
	if !strings.EqualFold(got.RAIDType, spec.RAIDType) {
		wrong = append(wrong, fmt.Sprintf("RAID type %s, not %s", orNone(got.RAIDType), spec.RAIDType))
	}
	if !sameLinks(got.Drives, spec.Drives) {
		wrong = append(wrong, fmt.Sprintf("drives %s, not %s", orNone(strings.Join(got.Drives, ", ")), strings.Join(spec.Drives, ", ")))
	}
	if spec.CapacityBytes > 0 && got.CapacityBytes != spec.CapacityBytes {
		wrong = append(wrong, fmt.Sprintf("%d bytes, not %d", got.CapacityBytes, spec.CapacityBytes))
	}
	if len(wrong) > 0 {
		return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("%w: the BMC created the volume %s with %s", errNotApplied, got.ID, strings.Join(wrong, "; "))}
	}
	return nil
}

// sameLinks compares @odata.ids as sets, trailing slashes aside.
func sameLinks(a, b []string) bool {
	norm := func(xs []string) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = strings.TrimSuffix(relPath(x), "/")
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(norm(a), norm(b))
}

// DeleteVolume DELETEs the volume.
func (cl *Client) DeleteVolume(ctx context.Context, volumeID string) (bmc.Task, error) {
	const op = "delete volume"
	var task bmc.Task
	path := relPath(volumeID)
	err := cl.run(ctx, op, func(api *gofish.APIClient, _ string) error {
		resp, err := api.Delete(path)
		defer schemas.DeferredCleanupHTTPResponse(resp)
		if err != nil {
			if statusOf(err) == http.StatusNotFound {
				return nil // gone already
			}
			return volumeError(op, err, "the volume "+path, cl.c.redactor())
		}
		if mon := monitorOf(resp); mon != "" {
			task = bmc.Task{Monitor: mon}
			return nil
		}
		_, _, err = getDoc(api, path)
		switch {
		case statusOf(err) == http.StatusNotFound:
			return nil
		case err != nil:
			return fmt.Errorf("reading the deleted volume %s back: %w", path, reduce(err))
		}
		return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("%w: the BMC answered %d to deleting the volume %s, which it still shows", errNotApplied, resp.StatusCode, path)}
	})
	return task, err
}

// volumeError classifies a refused volume request: 400 (and 409) is
// KindRefused naming the properties the BMC's messages name; 405 and 501
// KindUnsupported; others as any BMC answer.
func volumeError(op string, err error, what string, secrets *redact.Secrets) error {
	st := statusOf(err)
	he, _ := asHTTPError(err, secrets)
	switch st {
	case http.StatusBadRequest, http.StatusConflict:
		var props []string
		var rf *schemas.Error
		if errors.As(err, &rf) {
			for _, x := range rf.ExtendedInfos {
				for _, p := range x.RelatedProperties {
					p = strings.TrimPrefix(strings.TrimPrefix(p, "#"), "/")
					if p != "" && !slices.Contains(props, p) {
						props = append(props, p)
					}
				}
			}
		}
		named := ""
		if len(props) > 0 {
			named = " (" + strings.Join(props, ", ") + ")"
		}
		return &bmc.Error{Kind: bmc.KindRefused, Op: op, Err: fmt.Errorf("the BMC refused %s%s: %w", what, named, he)}
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return &bmc.Error{Kind: bmc.KindUnsupported, Op: op, Err: fmt.Errorf("the BMC does not take this request for %s: %w", what, he)}
	}
	return fmt.Errorf("%s: %w", what, he)
}
