package sim

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// The simulated OS: when a system powers on (or restarts) with a config
// drive carrying a ReadyURL in one of its slots, it "boots" and POSTs the
// ready URL with the drive's bearer token, as the vendor-data script of a
// real image would.
const (
	readyTries    = 30
	readyInterval = time.Second
	readyTimeout  = 10 * time.Second
)

// OSStatus is the simulated OS of one system.
type OSStatus struct {
	// Enabled: the system calls back after power-on (Options.NoOS and a
	// negative Options.OSBootDelay start systems disabled; see SetOS).
	Enabled bool `json:"enabled"`
	// PowerOns counts power-ons and restarts the sim applied.
	PowerOns int `json:"power_ons"`
	// Pending: a callback is waiting for OSBootDelay or retrying.
	Pending bool `json:"pending,omitempty"`
	// ReadyCalls counts POSTs of the ready URL, retries included.
	ReadyCalls int `json:"ready_calls"`
	// LastStatus is the HTTP status of the last POST (0: none yet, or it
	// got no answer; then LastError says why).
	LastStatus int    `json:"last_status,omitempty"`
	LastError  string `json:"last_error,omitempty"`
}

// OS returns the state of a system's simulated OS.
func (f *Fleet) OS(system string) (OSStatus, error) {
	s, err := f.lookup(system)
	if err != nil {
		return OSStatus{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.osStatusLocked(), nil
}

func (s *system) osStatusLocked() OSStatus {
	return OSStatus{
		Enabled: s.osEnabled, PowerOns: s.powerOns, Pending: s.osCancel != nil,
		ReadyCalls: s.readyCalls, LastStatus: s.readyStatus, LastError: s.readyErr,
	}
}

// ReadyCalls counts the POSTs a system's simulated OS sent to ready URLs
// (0 for an unknown system).
func (f *Fleet) ReadyCalls(system string) int {
	st, _ := f.OS(system)
	return st.ReadyCalls
}

// SetOS turns a system's simulated OS on or off. Off cancels a pending
// callback and keeps the system from ever calling back (a deploy that
// never reports ready); on takes effect at the next power-on.
func (f *Fleet) SetOS(system string, enabled bool) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.osEnabled = enabled
	if !enabled {
		s.stopOSLocked()
	}
	s.mu.Unlock()
	return nil
}

// applyPowerLocked is the one place power changes land. A restart (or a
// change from off to on) boots the simulated OS; off stops it. s.mu must
// be held.
func (f *Fleet) applyPowerLocked(s *system, on, restart bool) {
	was := s.power
	s.power = on
	if on && (!was || restart) {
		s.applyPendingLocked()
	}
	s.changedLocked()
	switch {
	case !on:
		s.stopOSLocked()
		s.machine.powerOffLocked()
	case !was || restart:
		s.powerOns++
		s.stopOSLocked()
		if s.machine != nil {
			f.bootMachineLocked(s) // boots what its boot device holds
		} else {
			f.bootLocked(s)
		}
	}
}

// stopOSLocked cancels the running OS callback, if any.
func (s *system) stopOSLocked() {
	s.osSeq++
	if s.osCancel != nil {
		s.osCancel()
		s.osCancel = nil
	}
}

// bootLocked starts the simulated OS when the system has one and a slot
// holds a config drive with a ready URL (the first such slot, in the
// BMC's order). s.mu must be held.
func (f *Fleet) bootLocked(s *system) {
	if !s.osEnabled {
		return
	}
	if d := s.slotDriveLocked(); d != nil {
		f.startOSLocked(s, d.ReadyURL, d.ReadyToken)
	}
}

// slotDriveLocked is the first slot's config drive with a ready URL, in
// the BMC's order; nil when none. s.mu must be held.
func (s *system) slotDriveLocked() *configdrive.Drive {
	for _, m := range s.slots {
		if m.inserted && m.drive != nil && m.drive.ReadyURL != "" {
			return m.drive
		}
	}
	return nil
}

// startOSLocked starts the simulated OS's callback to readyURL, unless
// the system's OS is disabled. s.mu must be held.
func (f *Fleet) startOSLocked(s *system, readyURL, token string) {
	if !s.osEnabled {
		return
	}
	ctx, cancel := context.WithCancel(f.life)
	seq := s.osSeq
	if !f.goBackground(func() { defer cancel(); f.runOS(ctx, s, seq, readyURL, token) }) {
		cancel()
		return
	}
	s.osCancel = cancel
}

// goBackground runs fn in a goroutine Close waits for; false once the
// fleet is closed.
func (f *Fleet) goBackground(fn func()) bool {
	f.lifeMu.RLock()
	defer f.lifeMu.RUnlock()
	if f.closed {
		return false
	}
	f.bg.Go(fn)
	return true
}

// runOS waits OSBootDelay, then POSTs readyURL until it answers 2xx or
// 4xx (retrying connection errors and 5xx every readyInterval, readyTries
// times), unless the power changes or the fleet closes first.
func (f *Fleet) runOS(ctx context.Context, s *system, seq uint64, readyURL, token string) {
	defer func() {
		s.mu.Lock()
		if s.osSeq == seq {
			s.osCancel = nil
		}
		s.mu.Unlock()
	}()
	if d := f.opts.OSBootDelay; d > 0 && !sleepCtx(ctx, d) {
		return
	}
	if u, err := url.Parse(readyURL); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		s.mu.Lock()
		if s.osSeq == seq {
			s.readyStatus, s.readyErr = 0, "the config drive's ready URL is not an http(s) URL"
		}
		s.mu.Unlock()
		return
	}
	for try := 1; try <= readyTries; try++ {
		status, err := f.postReady(ctx, readyURL, token)
		if ctx.Err() != nil {
			return // powered off or closed mid-call: not an outcome
		}
		s.mu.Lock()
		if s.osSeq != seq {
			s.mu.Unlock()
			return
		}
		s.readyCalls++
		s.readyStatus, s.readyErr = status, ""
		if err != nil {
			s.readyErr = cleanFetchError(err).Error()
		}
		s.mu.Unlock()
		if err == nil && status < 500 {
			return
		}
		if try < readyTries && !sleepCtx(ctx, readyInterval) {
			return
		}
	}
}

func (f *Fleet) postReady(ctx context.Context, readyURL, token string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, readyURL, http.NoBody)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	return resp.StatusCode, nil
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
