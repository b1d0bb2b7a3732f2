package sim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Dialect is which Redfish implementation a fleet imitates.
type Dialect string

const (
	// DialectStandard is the sim's own, standard-conforming Redfish.
	DialectStandard Dialect = ""
	// DialectSushy behaves like sushy-tools (OpenStack's Redfish emulator
	// in front of libvirt), as measured against sushy-tools:
	//
	//   - Boot.BootSourceOverrideEnabled always reads back "Continuous"
	//     (libvirt has no one-time boot), whatever was written;
	//   - BootSourceOverrideTarget@Redfish.AllowableValues lists Pxe, Cd
	//     and Hdd, no None; a PATCH of Boot without a target or mode is
	//     refused with 400 "Missing the BootSourceOverrideTarget and/or
	//     BootSourceOverrideMode element", and Enabled alone changes nothing;
	//   - VirtualMedia sits under /Systems/{id}/VirtualMedia with slots Cd
	//     and Floppy (the Manager has none);
	//   - InsertMedia fetches the image, into every slot, and answers HTTP
	//     500 Base.1.0.GeneralError "Failed fetching image from URL ..."
	//     when it cannot;
	//   - errors carry sushy's shape: a GeneralError whose extended info
	//     has a MessageId but no Message;
	//   - ComputerSystem.Reset allows On, ForceOff, GracefulShutdown,
	//     GracefulRestart, ForceRestart, Nmi and ForceOn (no PowerCycle).
	DialectSushy Dialect = "sushy"
)

// ParseDialect accepts "", "standard", "sushy" and the vendor dialects.
func ParseDialect(s string) (Dialect, error) {
	switch d := Dialect(strings.ToLower(strings.TrimSpace(s))); {
	case d == DialectStandard, d == DialectSushy, slices.Contains(VendorDialects, d):
		return d, nil
	case d == "standard":
		return DialectStandard, nil
	default:
		names := make([]string, len(VendorDialects))
		for i, v := range VendorDialects {
			names[i] = string(v)
		}
		return "", fmt.Errorf("sim: unknown dialect %q (want standard, sushy or a vendor's: %s)", s, strings.Join(names, ", "))
	}
}

var (
	sushyBootTargets  = []string{"Pxe", "Cd", "Hdd"}
	sushyResetTypes   = []string{"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi", "ForceOn"}
	sushyMediaSlots   = []string{"Cd", "Floppy"}
	sushyGeneralError = "Base.1.0.GeneralError"
)

// sushyError answers the way sushy-tools does: every error is a
// GeneralError, and its extended info names no message (clients must read
// error.message).
func sushyError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{
		"error": map[string]any{
			"code":    sushyGeneralError,
			"message": msg,
			"@Message.ExtendedInfo": []any{map[string]any{
				"@odata.type": "/redfish/v1/$metadata#Message.1.0.0.Message",
				"MessageId":   sushyGeneralError,
			}},
		},
	})
}

// patchSystemSushy is sushy-tools' PATCH of a ComputerSystem: the target
// (and mode) are applied, Enabled is ignored, and a Boot object with
// neither a target nor a mode is refused.
func (f *Fleet) patchSystemSushy(w http.ResponseWriter, r *http.Request, s *system) {
	var body struct {
		Boot *struct {
			BootSourceOverrideTarget  *string
			BootSourceOverrideMode    *string
			BootSourceOverrideEnabled *string
		}
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Boot == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b := body.Boot
	if b.BootSourceOverrideTarget == nil && b.BootSourceOverrideMode == nil {
		sushyError(w, http.StatusBadRequest, "Missing the BootSourceOverrideTarget and/or BootSourceOverrideMode element")
		return
	}
	if t := b.BootSourceOverrideTarget; t != nil && !slices.Contains(sushyBootTargets, *t) {
		sushyError(w, http.StatusBadRequest, fmt.Sprintf("Unknown boot device %s", *t))
		return
	}
	if m := b.BootSourceOverrideMode; m != nil && !slices.Contains(bootModes, *m) {
		sushyError(w, http.StatusBadRequest, fmt.Sprintf("Unknown boot mode %s", *m))
		return
	}
	if m := b.BootSourceOverrideMode; m != nil && !s.checkBootMode(w, *m) {
		return
	}
	s.mu.Lock()
	if t := b.BootSourceOverrideTarget; t != nil {
		s.bootTarget = *t
	}
	if m := b.BootSourceOverrideMode; m != nil {
		s.bootMode = *m
	}
	s.changedLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
