package sim

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// DefaultMediaSlots is what a system has unless Options.MediaSlots says
// otherwise: a virtual CD for boot images and a USB stick slot.
var DefaultMediaSlots = []string{"CD", "USB1"}

const (
	// fetchTimeout bounds fetching an image at insert time, as a BMC's
	// own HTTP client would.
	fetchTimeout = 10 * time.Second
	// maxFetch is what the sim keeps of a fetched image: a config drive
	// is a few hundred KiB at most. Larger images are read no further and
	// stay inserted, unparsed.
	maxFetch = 16 << 20
)

// slotKind is what a simulated slot emulates.
type slotKind int

const (
	kindCD        slotKind = iota // MediaTypes CD, DVD
	kindUSB                       // MediaTypes USBStick
	kindFloppy                    // MediaTypes Floppy
	kindRemovable                 // no MediaTypes and no Inserted: a quirky BMC
)

// mediaSlot is one virtual media slot of a system; its state is guarded
// by the system's mutex.
type mediaSlot struct {
	id    string
	kind  slotKind
	fetch bool // images are fetched at insert time

	image    string
	inserted bool
	wp       bool
	// version counts the slot's changes: its ETag.
	version uint64
	drive   *configdrive.Drive // the fetched image, if it is a config drive
	// file holds the fetched image of a VM-backed system's slot: the
	// VM's CD-ROM drive reads it.
	file string
}

// parseSlots turns Options.MediaSlots into slots. A name's prefix sets its
// kind: cd or dvd, usb, floppy (or fd), removable.
func parseSlots(names []string, fetchCD bool, kinds map[string]slotKind) ([]*mediaSlot, error) {
	if len(names) == 0 {
		names = DefaultMediaSlots
	}
	out := make([]*mediaSlot, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || strings.ContainsAny(n, "/?#% ") {
			return nil, fmt.Errorf("sim: invalid media slot name %q", n)
		}
		for _, o := range out {
			if strings.EqualFold(o.id, n) {
				return nil, fmt.Errorf("sim: duplicate media slot %q", n)
			}
		}
		k, vendor := kinds[strings.ToLower(n)]
		switch l := strings.ToLower(n); {
		case vendor:
		case strings.HasPrefix(l, "cd"), strings.HasPrefix(l, "dvd"):
			k = kindCD
		case strings.HasPrefix(l, "usb"):
			k = kindUSB
		case strings.HasPrefix(l, "floppy"), strings.HasPrefix(l, "fd"):
			k = kindFloppy
		case strings.HasPrefix(l, "removable"):
			k = kindRemovable
		default:
			return nil, fmt.Errorf("sim: media slot %q: the name must start with cd, dvd, usb, floppy, fd or removable", n)
		}
		out = append(out, &mediaSlot{id: n, kind: k, fetch: k != kindCD || fetchCD, wp: true})
	}
	return out, nil
}

func (m *mediaSlot) mediaTypes() []string {
	switch m.kind {
	case kindCD:
		return []string{"CD", "DVD"}
	case kindUSB:
		return []string{"USBStick"}
	case kindFloppy:
		return []string{"Floppy"}
	}
	return nil
}

func (m *mediaSlot) displayName() string {
	switch m.kind {
	case kindCD:
		return "Virtual CD"
	case kindUSB:
		return "Virtual USB Stick"
	case kindFloppy:
		return "Virtual Floppy"
	}
	return "Virtual Removable Media"
}

// MediaSlot is one virtual media slot as the sim holds it.
type MediaSlot struct {
	ID         string   `json:"id"`
	MediaTypes []string `json:"media_types,omitempty"`
	Image      string   `json:"image,omitempty"`
	Inserted   bool     `json:"inserted"`
	// ConfigDrive: the image was fetched and is a config drive.
	ConfigDrive bool `json:"config_drive,omitempty"`
}

func (m *mediaSlot) status() MediaSlot {
	return MediaSlot{ID: m.id, MediaTypes: m.mediaTypes(), Image: m.image, Inserted: m.inserted, ConfigDrive: m.drive != nil}
}

// bootSlotLocked is the slot Fleet.Media reports: the first CD, else the
// first slot. s.mu must be held.
func (s *system) bootSlotLocked() *mediaSlot {
	for _, m := range s.slots {
		if m.kind == kindCD {
			return m
		}
	}
	return s.slots[0]
}

func (s *system) slot(id string) *mediaSlot {
	for _, m := range s.slots {
		if m.id == id {
			return m
		}
	}
	return nil
}

// MediaSlots returns a system's virtual media slots in the order the BMC
// lists them.
func (f *Fleet) MediaSlots(system string) ([]MediaSlot, error) {
	s, err := f.lookup(system)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]MediaSlot, len(s.slots))
	for i, m := range s.slots {
		out[i] = m.status()
	}
	return out, nil
}

// SlotMedia returns one slot's image and whether it is inserted.
func (f *Fleet) SlotMedia(system, slot string) (image string, inserted bool, err error) {
	s, err := f.lookup(system)
	if err != nil {
		return "", false, err
	}
	m := s.slot(slot)
	if m == nil {
		return "", false, fmt.Errorf("sim: system %s has no media slot %q", s.id, slot)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return m.image, m.inserted, nil
}

func (s *system) mediaJSON(m *mediaSlot, path string) (map[string]any, string) {
	s.mu.Lock()
	img, in, wp, etag := m.image, m.inserted, m.wp, m.etagLocked()
	s.mu.Unlock()
	connected, name := "NotConnected", ""
	if in {
		connected = "URI"
	}
	if in || (img != "" && s.q.KeepImageAfterEject) {
		if u, err := url.Parse(img); err == nil {
			name = u.Path[strings.LastIndex(u.Path, "/")+1:]
		}
	}
	var image any
	if img != "" {
		image = img
	}
	d := map[string]any{
		"@odata.id":      path,
		"@odata.type":    "#VirtualMedia.v1_6_0.VirtualMedia",
		"Id":             m.id,
		"Name":           m.displayName(),
		"Image":          image,
		"ImageName":      name,
		"WriteProtected": wp,
		"ConnectedVia":   connected,
	}
	if !s.q.PatchOnlyMedia {
		insert := map[string]any{"target": path + "/Actions/VirtualMedia.InsertMedia"}
		if s.q.TransferParams {
			insert["TransferProtocolType@Redfish.AllowableValues"] = transferProtocols
			insert["TransferMethod@Redfish.AllowableValues"] = []string{"Stream"}
		}
		d["Actions"] = map[string]any{
			"#VirtualMedia.InsertMedia": insert,
			"#VirtualMedia.EjectMedia":  map[string]any{"target": path + "/Actions/VirtualMedia.EjectMedia"},
		}
	}
	if m.kind != kindRemovable {
		d["MediaTypes"] = m.mediaTypes()
		d["Inserted"] = in
	}
	return d, etag
}

func (m *mediaSlot) etagLocked() string { return fmt.Sprintf(`W/"vm-%d"`, m.version) }

// slotETag is slot m's current ETag.
func (s *system) slotETag(m *mediaSlot) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return m.etagLocked()
}

// insert puts an image into slot m: 409 when the slot is in use, and for
// slots that fetch, 400 when the image cannot be fetched. The fetch runs
// without the system's lock, so the slot is checked again when the image
// lands. How it lands follows the dialect: at once (204), never
// (InsertIgnored: 204 all the same), InsertDelay after the 204, or when
// the task of a 202 completes (TaskMonitor).
func (f *Fleet) insert(w http.ResponseWriter, r *http.Request, s *system, m *mediaSlot, body insertBody) {
	image := *body.Image
	u, err := url.Parse(image)
	if err != nil || u.Host == "" || !slices.Contains(mediaSchemes, strings.ToLower(u.Scheme)) {
		writeError(w, http.StatusBadRequest, "PropertyValueFormatError",
			"The value for the property Image is of a different format than the property can accept (want an http, https, nfs or cifs URL).")
		return
	}
	inUse := func() bool {
		if m.inserted {
			// Like most BMCs: eject first.
			writeError(w, http.StatusConflict, "ResourceInUse", "The virtual media is already inserted; eject it first.")
			return true
		}
		return false
	}
	s.mu.Lock()
	busy := inUse()
	s.mu.Unlock()
	if busy {
		return
	}
	var drive *configdrive.Drive
	var file string
	switch scheme := strings.ToLower(u.Scheme); {
	case s.vm != nil:
		// The VM reads the image itself, so every slot fetches it, whole.
		if scheme != "http" && scheme != "https" {
			writeError(w, http.StatusBadRequest, "PropertyValueFormatError",
				"The value for the property Image is of a different format than the property can accept (this system fetches http and https images only).")
			return
		}
		var status int
		file, status, err = f.fetchMedia(r.Context(), s.vm, m.id, image)
		if err != nil || status/100 != 2 {
			fetchFailed(w, s, m, u, status, err)
			return
		}
		if fi, err := os.Stat(file); err == nil && fi.Size() <= maxFetch {
			if data, err := os.ReadFile(file); err == nil {
				if d, err := configdrive.Parse(bytes.NewReader(data)); err == nil {
					drive = d
				}
			}
		}
	case m.fetch && (scheme == "http" || scheme == "https"):
		data, status, err := f.fetch(r.Context(), image)
		if err != nil || status/100 != 2 {
			fetchFailed(w, s, m, u, status, err)
			return
		}
		if d, err := configdrive.Parse(bytes.NewReader(data)); err == nil {
			drive = d
		}
	}
	wp := true
	if body.WriteProtected != nil {
		wp = *body.WriteProtected
	}
	// land puts the image in; false if the slot was taken meanwhile.
	land := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if m.inserted {
			return false
		}
		m.image, m.inserted, m.wp, m.drive, m.file = image, true, wp, drive, file
		m.version++
		return true
	}
	if s.vm != nil {
		if !land() {
			inUse()
			_ = os.Remove(file)
			return
		}
		if err := s.vm.do(r.Context(), vmOp{kind: opMedia, slot: s.slotIndex(m), file: file}); err != nil {
			s.mu.Lock()
			if m.file == file {
				m.image, m.inserted, m.drive, m.file = "", false, nil, ""
				m.version++
			}
			s.mu.Unlock()
			_ = os.Remove(file)
			writeError(w, http.StatusInternalServerError, "InternalError",
				fmt.Sprintf("The image could not be attached to virtual media %s: %v.", m.id, err))
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	switch {
	case s.q.InsertIgnored:
		// Answered as done, and nothing happens.
	case f.q.TaskMonitor:
		f.startTask(w, "VirtualMedia.InsertMedia", func() { f.later(s.q.InsertDelay, func() { land() }) })
		return
	case s.q.InsertDelay > 0:
		f.later(s.q.InsertDelay, func() { land() })
	default:
		if !land() {
			inUse()
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// later runs fn after d (at once when d is 0) unless the fleet closes
// first.
func (f *Fleet) later(d time.Duration, fn func()) {
	if d <= 0 {
		fn()
		return
	}
	f.goBackground(func() {
		if sleepCtx(f.life, d) {
			fn()
		}
	})
}

// fetchFailed answers an insert whose image could not be fetched: 400
// with a Redfish message naming the failure, or sushy-tools' 500.
func fetchFailed(w http.ResponseWriter, s *system, m *mediaSlot, u *url.URL, status int, err error) {
	if s.sushy {
		// The words of Python's requests, which sushy-tools quotes.
		side := "Client"
		if status >= 500 {
			side = "Server"
		}
		why := fmt.Sprintf("%d %s Error: %s for url: %s", status, side, http.StatusText(status), showURL(u))
		if err != nil {
			why = err.Error()
		}
		sushyError(w, http.StatusInternalServerError, fmt.Sprintf("Failed fetching image from URL %s: %s", showURL(u), why))
		return
	}
	msgID, why := "CouldNotEstablishConnection", ""
	switch {
	case err != nil:
		why = err.Error()
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		msgID, why = "ResourceAtUriUnauthorized", fmt.Sprintf("it answered HTTP %d", status)
	default:
		why = fmt.Sprintf("it answered HTTP %d", status)
	}
	writeError(w, http.StatusBadRequest, msgID,
		fmt.Sprintf("The image at %s could not be fetched for virtual media %s: %s.", showURL(u), m.id, why))
}

// eject empties slot m; a VM-backed system's drive is emptied at once.
// KeepImageAfterEject leaves the image's name in the slot, not inserted.
func (f *Fleet) eject(w http.ResponseWriter, r *http.Request, s *system, m *mediaSlot) {
	out := func() string {
		s.mu.Lock()
		defer s.mu.Unlock()
		file := m.file
		img := ""
		if s.q.KeepImageAfterEject {
			img = m.image
		}
		m.image, m.inserted, m.drive, m.file = img, false, nil, ""
		m.version++
		return file
	}
	if s.vm == nil && f.q.TaskMonitor {
		f.startTask(w, "VirtualMedia.EjectMedia", func() { out() })
		return
	}
	file := out()
	if s.vm != nil {
		err := s.vm.do(r.Context(), vmOp{kind: opMedia, slot: s.slotIndex(m)})
		if file != "" {
			_ = os.Remove(file)
		}
		if err != nil {
			writeError(w, http.StatusInternalServerError, "InternalError",
				fmt.Sprintf("The virtual media %s could not be ejected from the system: %v.", m.id, err))
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *system) slotIndex(m *mediaSlot) int {
	for i, o := range s.slots {
		if o == m {
			return i
		}
	}
	return -1
}

// fetch GETs an image the way a BMC does at insert time: bounded by
// fetchTimeout, the request and the fleet's life, and without verifying
// TLS certificates (controllers commonly serve self-signed ones). Only the
// first maxFetch bytes are kept (nil beyond: not a config drive).
func (f *Fleet) fetch(ctx context.Context, image string) (data []byte, status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	stop := context.AfterFunc(f.life, cancel)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, image, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, 0, cleanFetchError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, resp.StatusCode, nil
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxFetch+1))
	if err != nil {
		return nil, 0, cleanFetchError(err)
	}
	if len(data) > maxFetch {
		data = nil
	}
	return data, resp.StatusCode, nil
}

// cleanFetchError drops the URL that net/http puts in its errors (the
// message shows it once, without userinfo or query).
func cleanFetchError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("timed out after %s", fetchTimeout)
	}
	return err
}

// showURL is u without userinfo, query and fragment.
func showURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

// newClient is the HTTP client of the simulated BMCs and OSes: no proxy,
// no keep-alive (nothing left behind by Close), no certificate checks.
func newClient() *http.Client {
	return &http.Client{
		Transport: newTransport(),
		Timeout:   2 * fetchTimeout,
		// A BMC follows redirects; the default policy (10) is fine.
	}
}

func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: fetchTimeout}).DialContext,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // BMCs accept self-signed controller certs
		TLSHandshakeTimeout: fetchTimeout,
		DisableKeepAlives:   true,
	}
}
