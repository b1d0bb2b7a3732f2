package redfish

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// Virtual media, as real BMCs do it. The slots are found under the System
// (newer firmware, Supermicro X12, sushy-tools) or under its Manager
// (iDRAC, iLO, AMI). An image goes in by the InsertMedia action, with the
// TransferProtocolType and TransferMethod the action lists (Cisco CIMC
// wants them), again with the minimal body when the BMC refuses the
// optional Inserted and WriteProtected (Supermicro), or by PATCHing the
// slot when it has no action (Lenovo XCC). A 2xx proves nothing: some
// iDRAC firmware answers 204 and inserts nothing, an AMI shows the image
// seconds later. So every insert and eject is read back until the slot
// shows it (Options.MediaSettle), sent once more if it does not, and then
// fails naming the slot and what the BMC shows.

// mediaSlot is one virtual media slot as the BMC shows it, read leniently
// (like the system: one odd field must not make a slot unreadable).
type mediaSlot struct {
	Path       string // where it was read
	ID, Name   string
	MediaTypes []string
	Image      string
	ImageName  string
	// Inserted is the slot's Inserted; nil when the BMC does not have
	// the property (then ConnectedVia, else Image, says).
	Inserted     *bool
	ConnectedVia string
	ETag         string
	InsertTarget string
	InsertAction doc // for its parameters' allowable values
	EjectTarget  string
}

func getSlot(api *gofish.APIClient, p string) (*mediaSlot, error) {
	d, hdr, err := getDoc(api, p)
	if err != nil {
		return nil, err
	}
	v := &mediaSlot{Path: p, ID: d.str("Id"), Name: d.str("Name"), Image: d.str("Image"), ImageName: d.str("ImageName"),
		ConnectedVia: d.str("ConnectedVia")}
	v.MediaTypes = d.strs("MediaTypes")
	if b, ok := d.get("Inserted").(bool); ok {
		v.Inserted = &b
	}
	v.ETag = hdr.Get("ETag")
	if v.ETag == "" {
		v.ETag = d.str("@odata.etag")
	}
	actions := d.obj("Actions")
	v.InsertAction = actions.obj("#VirtualMedia.InsertMedia")
	v.InsertTarget = relPath(v.InsertAction.str("target"))
	v.EjectTarget = relPath(actions.obj("#VirtualMedia.EjectMedia").str("target"))
	return v, nil
}

// inserted reports whether the slot holds an image. Inserted decides where
// the BMC has it (Supermicro keeps Image after an eject, Inserted false).
func (v *mediaSlot) inserted() bool {
	switch {
	case v.Inserted != nil:
		return *v.Inserted
	case v.ConnectedVia != "":
		return !strings.EqualFold(v.ConnectedVia, "NotConnected")
	}
	return v.Image != ""
}

// shows reports whether the slot holds imageURL, allowing for what BMCs
// do to a URL: lower-case scheme and host, a default port dropped or
// added, userinfo, query or fragment dropped, or only the file name shown.
func (v *mediaSlot) shows(imageURL string) bool {
	if !v.inserted() {
		return false
	}
	// ImageName (often just the file name) only where Image is not
	// shown: every agent ISO is agent.iso.
	got := firstNonEmpty(v.Image, v.ImageName)
	return got != "" && sameImage(got, imageURL)
}

func sameImage(got, want string) bool {
	if got == want {
		return true
	}
	w, err := url.Parse(want)
	if err != nil {
		return false
	}
	if !strings.Contains(got, "/") {
		// Only a file name: the last segment of ours.
		return got == path.Base(w.Path) || got == path.Base(w.EscapedPath())
	}
	g, err := url.Parse(got)
	if err != nil {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		switch strings.ToLower(u.Scheme) {
		case "http":
			return "80"
		case "https":
			return "443"
		}
		return ""
	}
	return strings.EqualFold(g.Scheme, w.Scheme) && strings.EqualFold(g.Hostname(), w.Hostname()) &&
		port(g) == port(w) && g.Path == w.Path && (g.RawQuery == "" || g.RawQuery == w.RawQuery)
}

// describe says what the slot shows, for errors (no URL beyond its host
// and file name: URLs carry keys and tokens).
func (v *mediaSlot) describe() string {
	img := "no image"
	switch {
	case v.Image != "":
		img = "image " + describeImage(v.Image)
	case v.ImageName != "":
		img = "image name " + describeImage(v.ImageName)
	}
	ins := "Inserted not reported"
	if v.Inserted != nil {
		ins = fmt.Sprintf("Inserted=%t", *v.Inserted)
	}
	return ins + ", " + img
}

func (v *mediaSlot) label() string {
	return fmt.Sprintf("%s (%s)", slotName(v), v.Path)
}

// describeImage shows an image URL by scheme, host and file name only.
func describeImage(image string) string {
	u, err := url.Parse(image)
	if err != nil || u.Host == "" {
		return path.Base(image)
	}
	return u.Scheme + "://" + u.Host + "/.../" + path.Base(u.Path)
}

// checkImageURL rejects what no BMC could fetch, before any request.
func checkImageURL(op, imageURL string) error {
	if u, err := url.Parse(imageURL); err != nil || u.Scheme == "" || u.Host == "" {
		return bmc.Errorf(bmc.KindUnsupported, op, "image %q is not a URL", stripUserinfo(imageURL))
	}
	return nil
}

// InsertMedia attaches imageURL to the system's virtual CD (ejecting
// another image first) and reads it back; inserting the image already
// there sends nothing. A BMC that fetches the image at insert and cannot,
// or that will not take it, fails it with KindImage: the image's fault,
// not the BMC's. One that accepts it twice and does not show it fails with
// KindRefused, naming the slot and what it shows.
func (cl *Client) InsertMedia(ctx context.Context, imageURL string) error {
	const op = "insert media"
	if err := checkImageURL(op, imageURL); err != nil {
		return err
	}
	aboutImage := false
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		vms, err := listMedia(api, sys)
		if len(vms) == 0 {
			return err
		}
		cd := bootCD(vms)
		if cd == nil {
			return &bmc.Error{Kind: bmc.KindUnsupported, Op: "virtual media",
				Err: fmt.Errorf("%w: system %s has no virtual CD/DVD: %s", bmc.ErrNoVirtualMedia, sys, describeSlots(vms, nil, nil))}
		}
		err = cl.insertVerified(ctx, api, cd, imageURL)
		// Only the insert request's own answer can be about the image
		// (not the eject before it, nor a read-back).
		var ia *insertAnswer
		aboutImage = errors.As(err, &ia) && imageAnswer(ia.err, imageURL)
		return err
	})
	if aboutImage {
		return asImageError(err)
	}
	return err
}

// insertAnswer marks the BMC's answer to an insert request itself, the
// only answer that may be about the image.
type insertAnswer struct{ err error }

func (e *insertAnswer) Error() string { return e.err.Error() }
func (e *insertAnswer) Unwrap() error { return e.err }

// InsertConfigDrive attaches a config drive image in a slot other than the
// boot CD: a USB stick slot, then a floppy slot, then another CD slot
// (see configDriveSlot). It never takes the boot CD (it holds the image to
// boot) nor a slot holding an image this controller did not insert (an
// operator's media, e.g. a driver disk in an XCC's floppy slot): with no
// such slot it fails with KindUnsupported saying what the BMC has. A slot
// showing the image already means nothing to do.
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
		slot, done, err := configDriveSlot(vms, imageURL, cl.c.o.ownsMedia)
		if err != nil || done {
			return err
		}
		return cl.insertVerified(ctx, api, slot, imageURL)
	})
}

// EjectMedia detaches the boot CD's image and every image this controller
// inserted elsewhere (Options.OwnsMedia), and reads each slot back; empty
// slots, and slots holding an operator's media, are left alone. It tries
// every slot and reports the first failure.
func (cl *Client) EjectMedia(ctx context.Context) error {
	return cl.run(ctx, "eject media", func(api *gofish.APIClient, sys string) error {
		vms, listErr := listMedia(api, sys)
		if len(vms) == 0 {
			return listErr
		}
		boot := bootCD(vms)
		var errs []error
		for _, v := range vms {
			if !v.inserted() {
				continue
			}
			if v != boot && !cl.c.o.ownsMedia(v) {
				cl.c.o.log.Debug("leaving an image this controller did not insert", "bmc", cl.c.endpoint, "slot", v.label(), "image", describeImage(v.Image))
				continue
			}
			if ctx.Err() != nil {
				errs = append(errs, ctx.Err())
				break
			}
			if err := cl.ejectVerified(ctx, api, v); err != nil {
				errs = append(errs, fmt.Errorf("ejecting %s: %w", slotName(v), err))
			}
		}
		if listErr != nil {
			// Slots that could not be read may still hold an image. A
			// slot the BMC lists and will not show is the BMC's trouble,
			// not a lack of virtual media.
			errs = append(errs, &bmc.Error{Kind: bmc.KindBMCError, Op: "virtual media", Err: fmt.Errorf("reading its slots: %w", reduce(listErr))})
		}
		if len(errs) == 0 {
			return nil
		}
		// The first failure decides the kind (classify looks through the
		// chain); the rest are kept in the message.
		return errors.Join(errs...)
	})
}

// ownsMedia reports whether the image in v is one this controller put
// there (Options.OwnsMedia; without it, every image is).
func (o *Opener) ownsMedia(v *mediaSlot) bool {
	if o.opts.OwnsMedia == nil {
		return true
	}
	return o.opts.OwnsMedia(v.Image) || (v.Image == "" && o.opts.OwnsMedia(v.ImageName))
}

// insertVerified puts imageURL into slot v and reads it back: ejecting
// another image first, sending the insert at most twice, and waiting up
// to MediaSettle each time for the slot to show it.
func (cl *Client) insertVerified(ctx context.Context, api *gofish.APIClient, v *mediaSlot, imageURL string) error {
	if v.shows(imageURL) {
		return nil
	}
	for try := 1; ; try++ {
		if v.inserted() {
			if err := cl.ejectVerified(ctx, api, v); err != nil {
				return fmt.Errorf("ejecting %s from %s first: %w", describeImage(v.Image), slotName(v), reduce(err))
			}
		}
		if err := sendInsert(ctx, api, v, imageURL, cl.c.redactor()); err != nil {
			return err
		}
		now, err := cl.settle(ctx, api, v.Path, func(s *mediaSlot) bool { return s.shows(imageURL) })
		if err != nil {
			return err
		}
		if now.shows(imageURL) {
			if try > 1 {
				cl.c.o.log.Info("virtual media took on the second insert", "bmc", cl.c.endpoint, "slot", now.label())
			}
			return nil
		}
		if try == 2 {
			return &bmc.Error{Kind: bmc.KindRefused, Op: "insert media", Err: fmt.Errorf(
				"%w: virtual media slot %s was given %s twice, and %s later it shows %s",
				errNotApplied, now.label(), describeImage(imageURL), cl.c.o.opts.MediaSettle, now.describe())}
		}
		cl.c.o.log.Warn("virtual media accepted the image and does not show it; inserting again",
			"bmc", cl.c.endpoint, "slot", now.label(), "shows", now.describe())
		v = now
	}
}

// ejectVerified empties slot v and reads it back (a second eject if it
// still shows an image).
func (cl *Client) ejectVerified(ctx context.Context, api *gofish.APIClient, v *mediaSlot) error {
	for try := 1; ; try++ {
		if err := sendEject(ctx, api, v); err != nil {
			return err
		}
		now, err := cl.settle(ctx, api, v.Path, func(s *mediaSlot) bool { return !s.inserted() })
		if err != nil {
			return err
		}
		if !now.inserted() {
			return nil
		}
		if try == 2 {
			return &bmc.Error{Kind: bmc.KindRefused, Op: "eject media", Err: fmt.Errorf(
				"%w: virtual media slot %s was ejected twice, and %s later it shows %s",
				errNotApplied, now.label(), cl.c.o.opts.MediaSettle, now.describe())}
		}
		v = now
	}
}

// mediaPoll is the pause between two reads of a slot that does not show
// the change yet.
var mediaPoll = 250 * time.Millisecond

// settle reads slot p until done says the change shows, for up to
// MediaSettle; it returns the last reading.
func (cl *Client) settle(ctx context.Context, api *gofish.APIClient, p string, done func(*mediaSlot) bool) (*mediaSlot, error) {
	deadline := time.Now().Add(cl.c.o.opts.MediaSettle)
	for {
		v, err := getSlot(api, p)
		if err != nil {
			return nil, fmt.Errorf("reading virtual media %s back: %w", p, reduce(err))
		}
		if done(v) || !time.Now().Before(deadline) {
			return v, nil
		}
		select {
		case <-ctx.Done():
			// The caller's deadline cut the wait short: not a refusal.
			return nil, fmt.Errorf("waiting for virtual media %s to show the change (it shows %s): %w", v.label(), v.describe(), ctx.Err())
		case <-time.After(min(mediaPoll, time.Until(deadline))):
		}
	}
}

// sendInsert asks slot v to take imageURL: by its InsertMedia action, with
// the transfer parameters it lists, and once more with the minimal body
// when the full one is refused with 400; or by PATCH where the slot has
// no action.
func sendInsert(ctx context.Context, api *gofish.APIClient, v *mediaSlot, imageURL string, secrets *redact.Secrets) error {
	const op = "insert media"
	params, err := transferParams(api, v, imageURL)
	if err != nil {
		return err
	}
	full := map[string]any{"Image": imageURL, "Inserted": true, "WriteProtected": true}
	minimal := map[string]any{"Image": imageURL}
	for k, x := range params {
		full[k], minimal[k] = x, x
	}
	if v.InsertTarget == "" {
		// PATCH-only slots (Lenovo XCC).
		patch := func(body map[string]any) error {
			return patchResource(ctx, api, v.Path, body, v.ETag, func() (string, error) {
				now, err := getSlot(api, v.Path)
				if err != nil {
					return "", err
				}
				return now.ETag, nil
			})
		}
		err := patch(full)
		if statusOf(err) == http.StatusBadRequest {
			err = patch(map[string]any{"Image": imageURL, "Inserted": true})
		}
		return answer(err)
	}
	err = postAction(ctx, api, v.InsertTarget, full)
	if st := statusOf(err); st == http.StatusBadRequest && !imageAnswer(err, imageURL) {
		// Some BMCs refuse the optional parameters (Supermicro).
		err2 := postAction(ctx, api, v.InsertTarget, minimal)
		if err2 == nil || statusOf(err2) != http.StatusBadRequest || imageAnswer(err2, imageURL) {
			return answer(err2)
		}
		first, _ := asHTTPError(err, secrets)
		second, _ := asHTTPError(err2, secrets)
		return answer(fmt.Errorf("%s refused InsertMedia with Inserted and WriteProtected (%v), and without them: %w", slotName(v), first, second))
	}
	if err != nil && v.EjectTarget == "" && statusOf(err) == http.StatusMethodNotAllowed {
		return bmc.Errorf(bmc.KindUnsupported, op, "slot %s offers InsertMedia and refuses it (405)", v.label())
	}
	return answer(err)
}

// answer marks err (if any) as the BMC's answer to an insert.
func answer(err error) error {
	if err == nil {
		return nil
	}
	return &insertAnswer{err: err}
}

// sendEject asks slot v to let go of its image: EjectMedia, or a PATCH
// of Image and Inserted where the slot has no action.
func sendEject(ctx context.Context, api *gofish.APIClient, v *mediaSlot) error {
	if v.EjectTarget != "" {
		return postAction(ctx, api, v.EjectTarget, map[string]any{})
	}
	reread := func() (string, error) {
		now, err := getSlot(api, v.Path)
		if err != nil {
			return "", err
		}
		return now.ETag, nil
	}
	err := patchResource(ctx, api, v.Path, map[string]any{"Image": nil, "Inserted": false}, v.ETag, reread)
	if statusOf(err) == http.StatusBadRequest {
		err = patchResource(ctx, api, v.Path, map[string]any{"Inserted": false}, v.ETag, reread)
	}
	return err
}

// transferParams are the TransferProtocolType and TransferMethod to send
// with an insert, where the action lists them (inline or in its
// ActionInfo): the protocol of the image URL's scheme, and Stream (the BMC
// reads the image as the machine boots) where it may, else what it
// allows. A slot that lists protocols without the URL's fails here, before
// any request.
func transferParams(api *gofish.APIClient, v *mediaSlot, imageURL string) (map[string]any, error) {
	out := map[string]any{}
	if v.InsertTarget == "" {
		return out, nil
	}
	scheme := ""
	if u, err := url.Parse(imageURL); err == nil {
		scheme = strings.ToUpper(u.Scheme)
	}
	if protos := allowableValues(api, v.InsertAction, "TransferProtocolType", transferProtocolTypes); len(protos) > 0 {
		proto := ""
		for _, p := range protos {
			if strings.EqualFold(p, scheme) {
				proto = p
			}
		}
		if proto == "" {
			return nil, bmc.Errorf(bmc.KindUnsupported, "insert media", "virtual media slot %s fetches %s images only, not %s",
				v.label(), strings.Join(protos, ", "), strings.ToLower(scheme))
		}
		out["TransferProtocolType"] = proto
	}
	// Stream where the BMC lists it; otherwise none is sent: Upload would
	// have the BMC wait for an upload that never comes.
	if methods := allowableValues(api, v.InsertAction, "TransferMethod", []string{"Stream", "Upload"}); containsFold(methods, "Stream") {
		out["TransferMethod"] = "Stream"
	}
	return out, nil
}

var transferProtocolTypes = []string{"CIFS", "FTP", "SFTP", "HTTP", "HTTPS", "NFS", "SCP", "TFTP", "OEM"}

// listMedia returns the system's virtual media slots in the BMC's order:
// from the system's own VirtualMedia collection (newer BMCs) or from its
// managers'. A collection without members (Supermicro X10's OEM one,
// Intel's) is no virtual media: KindUnsupported, saying so. With slots, a
// non-nil error means some members could not be read.
func listMedia(api *gofish.APIClient, sys string) ([]*mediaSlot, error) {
	const op = "virtual media"
	s, err := getSystem(api, sys)
	if err != nil {
		return nil, err
	}
	var colls []string
	if s.VirtualMedia != "" {
		colls = append(colls, s.VirtualMedia)
	}
	for _, m := range s.ManagedBy {
		d, _, err := getDoc(api, m)
		if err != nil {
			// A manager that cannot be read may hold the slots.
			if len(colls) == 0 {
				return nil, err
			}
			continue
		}
		if l := d.link("VirtualMedia"); l != "" {
			colls = append(colls, l)
		}
	}
	var empty []string
	var lastErr error
	for _, c := range colls {
		d, _, err := getDoc(api, c)
		if err != nil {
			lastErr = err
			continue
		}
		members := d.members()
		if len(members) == 0 {
			empty = append(empty, c)
			continue
		}
		var vms []*mediaSlot
		for _, m := range members {
			v, err := getSlot(api, m)
			if err != nil {
				lastErr = err
				continue
			}
			vms = append(vms, v)
		}
		if len(vms) > 0 {
			return vms, lastErr
		}
	}
	switch {
	case lastErr != nil:
		return nil, lastErr
	case len(empty) > 0:
		return nil, &bmc.Error{Kind: bmc.KindUnsupported, Op: op, Err: fmt.Errorf("%w: system %s has no usable virtual media: its VirtualMedia collection %s has no slots (a licence or OEM feature the BMC lacks?)",
			bmc.ErrNoVirtualMedia, s.Path, strings.Join(empty, ", "))}
	}
	return nil, &bmc.Error{Kind: bmc.KindUnsupported, Op: op, Err: fmt.Errorf("%w: system %s has no virtual media", bmc.ErrNoVirtualMedia, s.Path)}
}

// hasType reports whether v advertises one of the media types.
func (v *mediaSlot) hasType(types ...string) bool {
	for _, t := range v.MediaTypes {
		if containsFold(types, t) {
			return true
		}
	}
	return false
}

// bootCD picks the slot InsertMedia uses: the first advertising CD or DVD,
// else the first whose Id or Name says so; nil if none.
func bootCD(vms []*mediaSlot) *mediaSlot {
	for _, v := range vms {
		if v.hasType("CD", "DVD") {
			return v
		}
	}
	for _, v := range vms {
		if len(v.MediaTypes) == 0 {
			if id := strings.ToLower(v.ID + " " + v.Name); strings.Contains(id, "cd") || strings.Contains(id, "dvd") {
				return v
			}
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
func kindOfSlot(v *mediaSlot) slotKind {
	if len(v.MediaTypes) > 0 {
		switch {
		case v.hasType("USBStick"):
			return slotUSB
		case v.hasType("Floppy"):
			return slotFloppy
		case v.hasType("CD", "DVD"):
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
// shows imageURL already. The order: USB stick, floppy, a CD slot that is
// not the boot CD; within a kind an empty slot before one holding an image
// of this controller's (owns: a config drive left by an earlier instance),
// which is ejected first. The boot CD is never taken: on a one-slot BMC
// it holds the image the machine boots (and a BMC that shows an insert
// seconds late must not have it taken for empty); nor is a slot holding
// anyone else's image.
func configDriveSlot(vms []*mediaSlot, imageURL string, owns func(*mediaSlot) bool) (slot *mediaSlot, done bool, err error) {
	for _, v := range vms {
		if v.shows(imageURL) {
			return v, true, nil
		}
	}
	boot := bootCD(vms)
	best, bestRank := (*mediaSlot)(nil), 0
	for _, v := range vms {
		k := kindOfSlot(v)
		if v == boot || k == slotOther || (v.inserted() && !owns(v)) {
			continue
		}
		rank := 2 * int(k)
		if v.inserted() {
			rank++
		}
		if best == nil || rank < bestRank {
			best, bestRank = v, rank
		}
	}
	if best == nil {
		return nil, false, bmc.Errorf(bmc.KindUnsupported, "insert config drive", "%s", describeSlots(vms, boot, owns))
	}
	return best, false, nil
}

// describeSlots says what the BMC has when no slot takes a config drive,
// e.g. "the BMC has one virtual media slot (CD), kept for the boot image".
// Image URLs are shown by host and file name only.
func describeSlots(vms []*mediaSlot, boot *mediaSlot, owns func(*mediaSlot) bool) string {
	kind := func(v *mediaSlot) string {
		if len(v.MediaTypes) == 0 {
			return "media types not advertised"
		}
		return strings.Join(v.MediaTypes, ", ")
	}
	use := func(v *mediaSlot) string {
		switch {
		case v == boot:
			return "kept for the boot image"
		case v.inserted() && (owns == nil || !owns(v)):
			return "holds " + describeImage(firstNonEmpty(v.Image, v.ImageName)) + ", which is left alone"
		case kindOfSlot(v) == slotOther:
			return "cannot take a disk image"
		}
		return "free"
	}
	if len(vms) == 1 {
		v := vms[0]
		what := slotName(v)
		if named := strings.ToLower(what); len(v.MediaTypes) > 0 && !strings.Contains(named, strings.ToLower(v.MediaTypes[0])) {
			what += ": " + kind(v)
		}
		return fmt.Sprintf("the BMC has one virtual media slot (%s), %s", what, use(v))
	}
	parts := make([]string, len(vms))
	for i, v := range vms {
		parts[i] = slotName(v) + " (" + kind(v) + "; " + use(v) + ")"
	}
	return fmt.Sprintf("the BMC has %d virtual media slots: %s; none is free for a config drive (want an empty USB stick, floppy or second CD slot)",
		len(vms), strings.Join(parts, ", "))
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// slotName is the slot's Id, else its Name, else its path.
func slotName(v *mediaSlot) string {
	switch {
	case v.ID != "":
		return v.ID
	case v.Name != "":
		return v.Name
	}
	return v.Path
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
