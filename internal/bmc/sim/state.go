package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"
)

// A real BMC keeps its server's state when the BMC itself restarts: the
// server stays powered on, its boot override and virtual media stay set.
// With Options.StateFile the fleet does the same across restarts of the
// process that runs it (controller serve --sim-systems keeps it in the
// data dir): otherwise every restart would power every system off, and
// the controller, Terraform and drift checks would see the machines
// change by themselves.
//
// Kept: power, boot override and mode, each media slot's image, whether
// it is inserted and write-protected, injected faults and ignore-power,
// BIOS attributes in effect and pending, Secure Boot, RAID volumes.
// Not kept: sessions (clients log in again, as after a BMC reboot), a
// power change still pending (PowerDelay), a VM's state (Options.VM
// refuses a StateFile: qemu holds it), and a fetched config drive, which
// holds an instance's user data and ready token: a system powered on
// after the restart boots no simulated OS from a drive inserted before
// it until the drive is inserted again.

// stateSaveInterval is how often a changed state is written; Close
// writes the last one. A process killed outright loses at most this.
var stateSaveInterval = time.Second

// stateVersion is the state file's format.
const stateVersion = 1

type fleetState struct {
	Version int                    `json:"version"`
	Systems map[string]systemState `json:"systems"` // by system id
}

type systemState struct {
	Power       bool        `json:"power"`
	BootTarget  string      `json:"boot_target"`
	BootEnabled string      `json:"boot_enabled"`
	BootMode    string      `json:"boot_mode"`
	Fault       Fault       `json:"fault,omitempty"`
	IgnorePower bool        `json:"ignore_power,omitempty"`
	Media       []slotState `json:"media,omitempty"`
	// BIOS attributes in effect and pending, and Secure Boot (issue 30);
	// absent in files written before them: the defaults then.
	BIOS          map[string]any `json:"bios,omitempty"`
	BIOSPending   map[string]any `json:"bios_pending,omitempty"`
	BIOSJob       bool           `json:"bios_job,omitempty"`
	SecureBoot    bool           `json:"secure_boot,omitempty"`
	SecureBootNow bool           `json:"secure_boot_current,omitempty"`
	// Volumes of the RAID controller (storage.go); staged jobs are lost.
	Volumes []volumeState `json:"volumes,omitempty"`
}

type slotState struct {
	ID             string `json:"id"`
	Image          string `json:"image,omitempty"`
	Inserted       bool   `json:"inserted"`
	WriteProtected bool   `json:"write_protected"`
}

// snapshotState returns the fleet's state as the file holds it.
func (f *Fleet) snapshotState() ([]byte, error) {
	st := fleetState{Version: stateVersion, Systems: make(map[string]systemState, len(f.order))}
	for _, s := range f.order {
		s.mu.Lock()
		ss := systemState{Power: s.power, BootTarget: s.bootTarget, BootEnabled: s.bootEnabled, BootMode: s.bootMode,
			Fault: s.fault, IgnorePower: s.ignorePower,
			BIOS: maps.Clone(s.bios), BIOSPending: maps.Clone(s.biosPending), BIOSJob: s.biosJob,
			SecureBoot: s.secureBoot, SecureBootNow: s.secureBootNow, Volumes: s.volumeStatesLocked()}
		for _, m := range s.slots {
			ss.Media = append(ss.Media, slotState{ID: m.id, Image: m.image, Inserted: m.inserted, WriteProtected: m.wp})
		}
		s.mu.Unlock()
		st.Systems[s.id] = ss
	}
	return json.MarshalIndent(st, "", "  ")
}

// loadState restores the state file's systems, if the file exists,
// before the fleet serves: a system the file does not name (a larger
// fleet than last time) starts afresh, one the fleet no longer has is
// dropped at the next save. A power state restored is the machine
// running on, not a power-on: the simulated OS does not boot again.
func (f *Fleet) loadState() error {
	if f.opts.StateFile == "" {
		return nil
	}
	if f.opts.VM != nil {
		return errors.New("sim: a state file is not kept for VM-backed systems (their qemu holds their state)")
	}
	data, err := os.ReadFile(f.opts.StateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("sim: read state: %w", err)
	default:
		var st fleetState
		if err := json.Unmarshal(data, &st); err != nil || st.Version != stateVersion {
			if err == nil {
				err = fmt.Errorf("format version %d, want %d", st.Version, stateVersion)
			}
			return fmt.Errorf("sim: state file %s: %w (remove it to start every system afresh)", f.opts.StateFile, err)
		}
		for id, ss := range st.Systems {
			s := f.systems[id]
			if s == nil {
				continue
			}
			s.mu.Lock()
			s.power, s.bootTarget, s.bootEnabled, s.bootMode = ss.Power, ss.BootTarget, ss.BootEnabled, ss.BootMode
			s.fault, s.flapFail, s.ignorePower = ss.Fault, ss.Fault == FaultFlap, ss.IgnorePower
			s.restoreBIOSLocked(ss)
			s.restoreVolumesLocked(ss.Volumes)
			for _, ms := range ss.Media {
				if m := s.slot(ms.ID); m != nil {
					m.image, m.inserted, m.wp = ms.Image, ms.Inserted, ms.WriteProtected
				}
			}
			s.mu.Unlock()
		}
	}
	// What is on disk (or the fresh state, when there is no file yet) is
	// not written again until it changes.
	f.stateSaved, err = f.snapshotState()
	return err
}

// startStateSaver writes the state every stateSaveInterval while it
// changes, until the fleet closes.
func (f *Fleet) startStateSaver() {
	if f.opts.StateFile == "" {
		return
	}
	f.goBackground(func() {
		t := time.NewTicker(stateSaveInterval)
		defer t.Stop()
		for {
			select {
			case <-f.life.Done():
				return
			case <-t.C:
				// A failure is tried again at the next tick, and Close
				// reports the last one.
				_ = f.saveState()
			}
		}
	})
}

// saveState writes the state when it differs from the last one written
// (through a temporary file and a rename, so a crash leaves the old file
// or the new one, never half of one).
func (f *Fleet) saveState() error {
	if f.opts.StateFile == "" {
		return nil
	}
	f.stateMu.Lock()
	defer f.stateMu.Unlock()
	data, err := f.snapshotState()
	if err != nil {
		return err
	}
	if bytes.Equal(data, f.stateSaved) {
		return nil
	}
	dir := filepath.Dir(f.opts.StateFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sim: save state: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".sim-state-*")
	if err != nil {
		return fmt.Errorf("sim: save state: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing left to remove
	_, werr := tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), f.opts.StateFile)
	}
	if werr != nil {
		return fmt.Errorf("sim: save state: %w", werr)
	}
	f.stateSaved = data
	return nil
}
