package redfish

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// checkImageURL rejects what no BMC could fetch, before any request.
func checkImageURL(op, imageURL string) error {
	if u, err := url.Parse(imageURL); err != nil || u.Scheme == "" || u.Host == "" {
		return bmc.Errorf(bmc.KindUnsupported, op, "image %q is not a URL", stripUserinfo(imageURL))
	}
	return nil
}

// InsertMedia attaches imageURL to the system's virtual CD (ejecting another
// image first); inserting the image already there sends nothing. A BMC
// that fetches the image at insert and cannot, or that will not take it,
// fails it with KindImage: the image's fault, not the BMC's.
func (cl *Client) InsertMedia(ctx context.Context, imageURL string) error {
	const op = "insert media"
	if err := checkImageURL(op, imageURL); err != nil {
		return err
	}
	aboutImage := false
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		cd, err := findCD(api, sys)
		if err != nil {
			return err
		}
		err = insertInto(cd, imageURL)
		aboutImage = err != nil && imageAnswer(err, imageURL)
		return err
	})
	if aboutImage {
		return asImageError(err)
	}
	return err
}

// InsertConfigDrive attaches a config drive image in a slot other than the
// boot CD: a USB stick slot, then a floppy slot, then another CD slot, and
// the boot CD itself only while it is empty (a PXE deploy). A slot holding
// the image already means nothing to do; a slot holding another image is
// ejected first.
func (cl *Client) InsertConfigDrive(ctx context.Context, imageURL string) error {
	const op = "insert config drive"
	if err := checkImageURL(op, imageURL); err != nil {
		return err
	}
	return cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		vms, err := listMedia(api, sys)
		if err != nil {
			// A slot that could not be read might be the one to use (or
			// hold this very image): better to fail than to pick worse.
			return err
		}
		slot, done, err := configDriveSlot(vms, imageURL)
		if err != nil || done {
			return err
		}
		return insertInto(slot, imageURL)
	})
}

// insertInto inserts imageURL into v, ejecting another image first;
// inserting the image already there sends nothing.
func insertInto(v *schemas.VirtualMedia, imageURL string) error {
	if inserted(v) {
		if v.Image == imageURL {
			return nil
		}
		if _, err := v.EjectMedia(); err != nil {
			return fmt.Errorf("ejecting %s from %s first: %w", redactImage(v.Image), slotName(v), err)
		}
	}
	yes := true
	_, err := v.InsertMedia(&schemas.VirtualMediaInsertMediaParameters{Image: imageURL, Inserted: &yes, WriteProtected: &yes})
	if err != nil && statusOf(err) == http.StatusBadRequest && isUnsupportedMessage(messageIDOf(err)) {
		// Some BMCs refuse the optional parameters.
		_, err = v.InsertMedia(&schemas.VirtualMediaInsertMediaParameters{Image: imageURL})
	}
	return err
}

// EjectMedia detaches every inserted virtual media slot (the boot CD and a
// config drive, if any); empty slots send nothing. It tries every slot and
// reports the first failure.
func (cl *Client) EjectMedia(ctx context.Context) error {
	return cl.run(ctx, "eject media", func(api *gofish.APIClient, sys string) error {
		vms, listErr := listMedia(api, sys)
		if len(vms) == 0 {
			return listErr
		}
		var errs []error
		for _, v := range vms {
			if !inserted(v) {
				continue
			}
			if ctx.Err() != nil {
				errs = append(errs, ctx.Err())
				break
			}
			if _, err := v.EjectMedia(); err != nil {
				errs = append(errs, fmt.Errorf("ejecting %s: %w", slotName(v), err))
			}
		}
		if listErr != nil {
			// Slots that could not be read may still hold an image.
			errs = append(errs, listErr)
		}
		if len(errs) == 0 {
			return nil
		}
		// The first failure decides the kind (classify looks through the
		// chain); the rest are kept in the message.
		return errors.Join(errs...)
	})
}

func inserted(v *schemas.VirtualMedia) bool {
	if v.Inserted != nil {
		return *v.Inserted
	}
	return v.Image != ""
}

// listMedia returns the system's virtual media slots in the BMC's order:
// from the system's own VirtualMedia collection (newer BMCs) or from its
// manager's. With slots, a non-nil error means some members could not be
// read.
func listMedia(api *gofish.APIClient, sys string) ([]*schemas.VirtualMedia, error) {
	const op = "virtual media"
	s, err := getSystem(api, sys)
	if err != nil {
		return nil, err
	}
	var vms []*schemas.VirtualMedia
	var lastErr error
	if s.VirtualMedia != "" {
		vms, lastErr = schemas.ListReferencedVirtualMedias(api, s.VirtualMedia)
	}
	for _, m := range s.ManagedBy {
		if len(vms) > 0 {
			break
		}
		mgr, err := schemas.GetObject[schemas.Manager](api, m)
		if err != nil {
			lastErr = err
			continue
		}
		vms, lastErr = mgr.VirtualMedia()
	}
	if len(vms) == 0 {
		if lastErr != nil {
			return nil, lastErr
		}
		return nil, bmc.Errorf(bmc.KindUnsupported, op, "system %s has no virtual media", s.Path)
	}
	return vms, lastErr
}

// findCD returns the system's virtual CD, the slot boot images go to.
func findCD(api *gofish.APIClient, sys string) (*schemas.VirtualMedia, error) {
	vms, err := listMedia(api, sys)
	if len(vms) == 0 {
		return nil, err
	}
	if cd := bootCD(vms); cd != nil {
		return cd, nil
	}
	return nil, bmc.Errorf(bmc.KindUnsupported, "virtual media", "system %s has no virtual CD/DVD", sys)
}

// bootCD picks the slot InsertMedia uses: the first advertising CD or DVD,
// else the first whose Id or Name says so; nil if none.
func bootCD(vms []*schemas.VirtualMedia) *schemas.VirtualMedia {
	for _, v := range vms {
		for _, t := range v.MediaTypes {
			if t == schemas.CDVirtualMediaType || t == schemas.DVDVirtualMediaType {
				return v
			}
		}
	}
	for _, v := range vms {
		if id := strings.ToLower(v.ID + " " + v.Name); strings.Contains(id, "cd") || strings.Contains(id, "dvd") {
			return v
		}
	}
	return nil
}

// slotKind is what a virtual media slot can take, best config drive slot
// first.
type slotKind int

const (
	slotUSB slotKind = iota
	slotFloppy
	slotCD
	slotOther
)

// kindOfSlot reads MediaTypes; a BMC that advertises none is judged by
// the slot's Id and Name (iDRAC's "RemovableDisk", "Floppy1", ...).
func kindOfSlot(v *schemas.VirtualMedia) slotKind {
	if len(v.MediaTypes) > 0 {
		has := func(ts ...schemas.VirtualMediaType) bool {
			for _, t := range v.MediaTypes {
				for _, w := range ts {
					if strings.EqualFold(string(t), string(w)) {
						return true
					}
				}
			}
			return false
		}
		switch {
		case has(schemas.USBStickVirtualMediaType):
			return slotUSB
		case has(schemas.FloppyVirtualMediaType):
			return slotFloppy
		case has(schemas.CDVirtualMediaType, schemas.DVDVirtualMediaType):
			return slotCD
		}
		return slotOther
	}
	id := strings.ToLower(v.ID + " " + v.Name)
	switch {
	case strings.Contains(id, "usb"), strings.Contains(id, "removable"):
		return slotUSB
	case strings.Contains(id, "floppy"):
		return slotFloppy
	case strings.Contains(id, "cd"), strings.Contains(id, "dvd"):
		return slotCD
	}
	return slotOther
}

// configDriveSlot chooses where a config drive goes. done means a slot
// holds imageURL already. The order: USB stick, floppy, a CD slot that is
// not the boot CD, then the boot CD if it is empty; within a kind an empty
// slot before one whose image must be ejected.
func configDriveSlot(vms []*schemas.VirtualMedia, imageURL string) (slot *schemas.VirtualMedia, done bool, err error) {
	for _, v := range vms {
		if inserted(v) && v.Image == imageURL {
			return v, true, nil
		}
	}
	boot := bootCD(vms)
	best, bestRank := (*schemas.VirtualMedia)(nil), 0
	for _, v := range vms {
		var rank int
		switch k := kindOfSlot(v); {
		case v == boot:
			if inserted(v) {
				continue
			}
			rank = 2*int(slotOther) + 1 // last resort
		case k == slotOther:
			continue
		default:
			rank = 2 * int(k)
			if inserted(v) {
				rank++
			}
		}
		if best == nil || rank < bestRank {
			best, bestRank = v, rank
		}
	}
	if best == nil {
		return nil, false, bmc.Errorf(bmc.KindUnsupported, "insert config drive", "%s", describeSlots(vms, boot))
	}
	return best, false, nil
}

// describeSlots says what the BMC has when no slot takes a config drive,
// e.g. "the BMC has one virtual media slot (CD), used by the boot image".
// Image URLs are left out: they may carry tokens.
func describeSlots(vms []*schemas.VirtualMedia, boot *schemas.VirtualMedia) string {
	kind := func(v *schemas.VirtualMedia) string {
		if len(v.MediaTypes) == 0 {
			return "media types not advertised"
		}
		ts := make([]string, len(v.MediaTypes))
		for i, t := range v.MediaTypes {
			ts[i] = string(t)
		}
		return strings.Join(ts, ", ")
	}
	if len(vms) == 1 {
		v := vms[0]
		what := slotName(v)
		if named := strings.ToLower(what); len(v.MediaTypes) > 0 && !strings.Contains(named, strings.ToLower(string(v.MediaTypes[0]))) {
			what += ": " + kind(v)
		}
		if v == boot {
			return fmt.Sprintf("the BMC has one virtual media slot (%s), used by the boot image", what)
		}
		return fmt.Sprintf("the BMC has one virtual media slot (%s), which cannot take a config drive image", what)
	}
	parts := make([]string, len(vms))
	for i, v := range vms {
		p := slotName(v) + " (" + kind(v)
		if v == boot {
			p += "; used by the boot image"
		}
		parts[i] = p + ")"
	}
	return fmt.Sprintf("the BMC has %d virtual media slots: %s; none is free for a config drive (want a USB stick, floppy or second CD slot)",
		len(vms), strings.Join(parts, ", "))
}

// slotName is the slot's Id, else its Name, else its path.
func slotName(v *schemas.VirtualMedia) string {
	switch {
	case v.ID != "":
		return v.ID
	case v.Name != "":
		return v.Name
	}
	return v.ODataID
}

// redactImage shows an image URL without userinfo, query or fragment
// (signed URLs and config drive URLs carry tokens there).
func redactImage(image string) string {
	u, err := url.Parse(image)
	if err != nil {
		return "an image"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
