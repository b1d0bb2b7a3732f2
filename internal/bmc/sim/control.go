package sim

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
)

// SystemStatus is one system as the control API shows it.
type SystemStatus struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	Power       string `json:"power"`
	Fault       string `json:"fault"`
	IgnorePower bool   `json:"ignore_power,omitempty"`
	BootTarget  string `json:"boot_target"`
	BootEnabled string `json:"boot_enabled"`
	// MediaImage and Inserted are the virtual CD's (as Fleet.Media);
	// MediaSlots has every slot.
	MediaImage string      `json:"media_image,omitempty"`
	Inserted   bool        `json:"media_inserted"`
	MediaSlots []MediaSlot `json:"media_slots"`
	OS         OSStatus    `json:"os"`
	Requests   int64       `json:"requests"`
	// VM is the qemu side of a VM-backed system (Options.VM).
	VM *VMStatus `json:"vm,omitempty"`
	// Machine is the simulated hardware (Options.Machine).
	Machine *MachineStatus `json:"machine,omitempty"`
	// BIOS are the BIOS attributes in effect, BIOSPending those written
	// and applied at the next reset; SecureBoot is SecureBootEnable and
	// SecureBootCurrentBoot.
	BIOS        map[string]any   `json:"bios,omitempty"`
	BIOSPending map[string]any   `json:"bios_pending,omitempty"`
	SecureBoot  SecureBootStatus `json:"secure_boot"`
	// Firmware are the firmware versions in effect by component (BIOS,
	// BMC, NIC.Integrated.1), FirmwarePending those staged for the next
	// reset (update.go).
	Firmware        map[string]string `json:"firmware"`
	FirmwarePending map[string]string `json:"firmware_pending,omitempty"`
}

// SecureBootStatus is a system's Secure Boot as the control API shows it.
type SecureBootStatus struct {
	Enabled bool `json:"enabled"`
	Current bool `json:"current"`
}

func (s *system) status() SystemStatus {
	var vm *VMStatus
	power := ""
	if s.vm != nil {
		st := s.vm.status()
		vm = &st
		power = s.vm.powerState(context.Background())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cd := s.bootSlotLocked()
	slots := make([]MediaSlot, len(s.slots))
	for i, m := range s.slots {
		slots[i] = m.status()
	}
	if power == "" {
		power = powerString(s.power)
	}
	var machine *MachineStatus
	if s.machine != nil {
		st := s.machine.statusLocked()
		machine = &st
	}
	fw, fwPending := s.firmwareStatusLocked()
	return SystemStatus{
		ID: s.id, Path: s.path, Power: power, Fault: string(s.fault), VM: vm,
		IgnorePower: s.ignorePower, BootTarget: s.bootTarget, BootEnabled: s.bootEnabled,
		MediaImage: cd.image, Inserted: cd.inserted, MediaSlots: slots,
		OS: s.osStatusLocked(), Requests: s.requests.Load(), Machine: machine,
		BIOS: s.biosLocked(), BIOSPending: maps.Clone(s.biosPending),
		SecureBoot: SecureBootStatus{Enabled: s.secureBoot, Current: s.secureBootNow},
		Firmware:   fw, FirmwarePending: fwPending,
	}
}

// control serves the unauthenticated /sim API (see the package doc).
func (f *Fleet) control(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")[1:] // drop "sim"
	fail := func(status int, msg string) {
		writeJSON(w, status, map[string]string{"error": msg})
	}
	switch {
	case len(segs) == 1 && segs[0] == "systems" && r.Method == http.MethodGet:
		out := make([]SystemStatus, len(f.order))
		for i, s := range f.order {
			out[i] = s.status()
		}
		writeJSON(w, http.StatusOK, map[string]any{"systems": out, "total_requests": f.TotalRequests()})
	case len(segs) == 1 && segs[0] == "fault" && r.Method == http.MethodPost:
		fault, ok := readFault(w, r, fail)
		if !ok {
			return
		}
		f.SetAllFaults(fault)
		writeJSON(w, http.StatusOK, map[string]any{"fault": fault, "systems": len(f.order)})
	case len(segs) >= 2 && segs[0] == "systems":
		s := f.systems[segs[1]]
		if s == nil {
			fail(http.StatusNotFound, "no such system")
			return
		}
		switch {
		case len(segs) == 2 && r.Method == http.MethodGet:
			writeJSON(w, http.StatusOK, s.status())
		case len(segs) == 3 && segs[2] == "fault" && r.Method == http.MethodPost:
			fault, ok := readFault(w, r, fail)
			if !ok {
				return
			}
			s.setFault(fault)
			writeJSON(w, http.StatusOK, s.status())
		case len(segs) == 3 && segs[2] == "power" && r.Method == http.MethodPost:
			var body struct {
				Power string `json:"power"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body); err != nil {
				fail(http.StatusBadRequest, "want {\"power\":\"On\"} or {\"power\":\"Off\"}")
				return
			}
			var err error
			switch strings.ToLower(body.Power) {
			case "on":
				err = f.SetPower(s.id, true)
			case "off":
				err = f.SetPower(s.id, false)
			default:
				fail(http.StatusBadRequest, "power must be On or Off")
				return
			}
			if err != nil {
				fail(http.StatusInternalServerError, err.Error())
				return
			}
			writeJSON(w, http.StatusOK, s.status())
		case len(segs) == 3 && segs[2] == "ignore-power" && r.Method == http.MethodPost:
			var body struct {
				Ignore bool `json:"ignore"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body); err != nil {
				fail(http.StatusBadRequest, "want {\"ignore\":true}")
				return
			}
			_ = f.SetIgnorePower(s.id, body.Ignore)
			writeJSON(w, http.StatusOK, s.status())
		case len(segs) == 3 && segs[2] == "os" && r.Method == http.MethodPost:
			var body struct {
				Enabled *bool `json:"enabled"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body); err != nil || body.Enabled == nil {
				fail(http.StatusBadRequest, "want {\"enabled\":false} or {\"enabled\":true}")
				return
			}
			_ = f.SetOS(s.id, *body.Enabled)
			writeJSON(w, http.StatusOK, s.status())
		case len(segs) == 3 && segs[2] == "bios" && r.Method == http.MethodPost:
			var body struct {
				Attributes map[string]any `json:"Attributes"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body); err != nil || len(body.Attributes) == 0 {
				fail(http.StatusBadRequest, "want {\"Attributes\":{\"Name\":value}}")
				return
			}
			for name, v := range body.Attributes {
				if err := f.SetBIOSAttribute(s.id, name, v); err != nil {
					fail(http.StatusBadRequest, err.Error())
					return
				}
			}
			writeJSON(w, http.StatusOK, s.status())
		case len(segs) == 3 && (segs[2] == "sensors" || segs[2] == "health" || segs[2] == "log") && r.Method == http.MethodPost:
			f.controlHealth(w, r, s, segs[2], fail)
		case len(segs) >= 3 && (segs[2] == "storage" || segs[2] == "volumes"):
			f.controlStorage(w, r, s, segs[2:], fail)
		case len(segs) == 3 && segs[2] == "secure-boot" && r.Method == http.MethodPost:
			var body struct {
				Enabled *bool `json:"enabled"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body); err != nil || body.Enabled == nil {
				fail(http.StatusBadRequest, "want {\"enabled\":true} or {\"enabled\":false}")
				return
			}
			if err := f.SetSecureBoot(s.id, *body.Enabled); err != nil {
				fail(http.StatusBadRequest, err.Error())
				return
			}
			writeJSON(w, http.StatusOK, s.status())
		case len(segs) == 3 && segs[2] == "firmware" && r.Method == http.MethodPost:
			var body struct {
				Component string `json:"component"`
				Version   string `json:"version"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body); err != nil {
				fail(http.StatusBadRequest, "want {\"component\":\"BIOS\",\"version\":\"2.0.0\"}")
				return
			}
			if err := f.SetFirmwareVersion(s.id, body.Component, body.Version); err != nil {
				fail(http.StatusBadRequest, err.Error())
				return
			}
			writeJSON(w, http.StatusOK, s.status())
		default:
			fail(http.StatusNotFound, "unknown control request")
		}
	default:
		fail(http.StatusNotFound, "unknown control request")
	}
}

func readFault(_ http.ResponseWriter, r *http.Request, fail func(int, string)) (Fault, bool) {
	var body struct {
		Fault string `json:"fault"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&body); err != nil {
		fail(http.StatusBadRequest, "want {\"fault\":\"down|hang|slow|error|auth|flap|none\"}")
		return "", false
	}
	fault, err := ParseFault(body.Fault)
	if err != nil {
		fail(http.StatusBadRequest, err.Error())
		return "", false
	}
	return fault, true
}
