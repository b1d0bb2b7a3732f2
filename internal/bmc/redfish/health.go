package redfish

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Hardware health and the event log (issue 31). Read with the lenient
// doc, not gofish's Thermal/Power types, for the reason getSystem gives:
// one mistyped sensor field would lose every reading.

var (
	_ bmc.HealthGetter   = (*Client)(nil)
	_ bmc.EventLogReader = (*Client)(nil)
)

var healthRank = map[string]int{bmc.HealthOK: 0, bmc.HealthWarning: 1, bmc.HealthCritical: 2}

// normHealth maps a Redfish Health to bmc's ("" for none or unknown).
func normHealth(s string) string {
	for h := range healthRank {
		if strings.EqualFold(strings.TrimSpace(s), h) {
			return h
		}
	}
	return ""
}

func worst(a, b string) string {
	if b != "" && (a == "" || healthRank[b] > healthRank[a]) {
		return b
	}
	return a
}

// reason is one line of Health.Reasons with its rank, for the order.
type reason struct {
	health, text string
}

type healthReader struct {
	h       bmc.Health
	reasons []reason
}

func (r *healthReader) add(health, format string, args ...any) {
	r.reasons = append(r.reasons, reason{health, fmt.Sprintf(format, args...)})
	r.h.State = worst(r.h.State, health)
}

// Health reads the system's Status, then each chassis it links: its
// Status and its sensors, through ThermalSubsystem/PowerSubsystem (and
// the chassis' Sensors for temperatures) where linked, else Thermal and
// Power. The newer form is preferred: iDRAC 9 7.x serves both and its
// Thermal fails intermittently (bb-Ricardo/check_redfish#195). State is
// the worst of the rollups and of what the sensors say; a temperature at
// or above its critical threshold is Critical whatever its Status. A
// power supply whose State is Absent counts (as failed) only when the
// chassis names it in a redundancy group (Power.Redundancy's
// RedundancySet, PowerSubsystem.PowerSupplyRedundancy's
// RedundancyGroup): a member of a redundant pair was pulled; any other
// absent supply is an empty bay and is not counted.
func (cl *Client) Health(ctx context.Context) (bmc.Health, error) {
	const op = "read health"
	var out bmc.Health
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		d, _, err := getDoc(api, sys)
		if err != nil {
			if statusOf(err) == http.StatusNotFound {
				return fmt.Errorf("%w: %s", ErrSystemNotFound, sys)
			}
			return err
		}
		r := &healthReader{}
		st := d.obj("Status")
		r.h.State = worst(normHealth(st.str("Health")), normHealth(st.str("HealthRollup")))
		for _, l := range d.obj("Links").arr("Chassis") {
			if p := linkOf(l); p != "" {
				if err := r.chassis(api, p); err != nil {
					return err
				}
			}
		}
		// Worst first; alike ones by text, so the order does not
		// depend on which form the BMC served them in.
		slices.SortFunc(r.reasons, func(a, b reason) int {
			if d := healthRank[b.health] - healthRank[a.health]; d != 0 {
				return d
			}
			return strings.Compare(a.text, b.text)
		})
		for _, x := range r.reasons {
			r.h.Reasons = append(r.h.Reasons, x.text)
		}
		if r.h.State != "" && r.h.State != bmc.HealthOK && len(r.h.Reasons) == 0 {
			r.h.Reasons = []string{fmt.Sprintf("system: %s (the BMC names no failed sensor)", r.h.State)}
		}
		out = r.h
		return nil
	})
	return out, err
}

func (r *healthReader) chassis(api *gofish.APIClient, path string) error {
	d, _, err := getDoc(api, path)
	if err != nil {
		return fmt.Errorf("reading the chassis %s: %w", path, reduce(err))
	}
	st := d.obj("Status")
	r.h.State = worst(r.h.State, worst(normHealth(st.str("Health")), normHealth(st.str("HealthRollup"))))
	if ts := d.link("ThermalSubsystem"); ts != "" {
		if err := r.thermalSubsystem(api, ts, d.link("Sensors")); err != nil {
			return err
		}
	} else if t := d.link("Thermal"); t != "" {
		td, _, err := getDoc(api, t)
		if err != nil {
			return fmt.Errorf("reading %s: %w", t, reduce(err))
		}
		for _, x := range td.arr("Temperatures") {
			t, _ := x.(map[string]any)
			td := doc(t)
			r.temperature(td.str("Name"), td.get("ReadingCelsius"), td.num("UpperThresholdCritical"), td.obj("Status"))
		}
		for _, x := range td.arr("Fans") {
			f, _ := x.(map[string]any)
			fd := doc(f)
			name := fd.str("Name")
			if name == "" {
				name = fd.str("FanName")
			}
			r.fan(name, fd.get("Reading"), fd.str("ReadingUnits"), fd.obj("Status"))
		}
	}
	if ps := d.link("PowerSubsystem"); ps != "" {
		return r.powerSubsystem(api, ps)
	}
	if p := d.link("Power"); p != "" {
		pd, _, err := getDoc(api, p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, reduce(err))
		}
		redundant := map[string]bool{}
		for _, x := range pd.arr("Redundancy") {
			rd, _ := x.(map[string]any)
			for _, m := range doc(rd).arr("RedundancySet") {
				redundant[linkOf(m)] = true
			}
		}
		for _, x := range pd.arr("PowerSupplies") {
			p, _ := x.(map[string]any)
			psd := doc(p)
			r.psu(psd.str("Name"), psd.obj("Status"), redundant[psd.str("@odata.id")], psd.get("LineInputVoltage"), "")
		}
	}
	return nil
}

func (r *healthReader) thermalSubsystem(api *gofish.APIClient, path, sensors string) error {
	ts, _, err := getDoc(api, path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, reduce(err))
	}
	if fans := ts.link("Fans"); fans != "" {
		if err := eachMember(api, fans, func(fd doc) {
			r.fan(fd.str("Name"), fd.obj("SpeedPercent").get("SpeedRPM"), "RPM", fd.obj("Status"))
		}); err != nil {
			return err
		}
	}
	if sensors == "" {
		return nil
	}
	return eachMember(api, sensors, func(sd doc) {
		if strings.EqualFold(sd.str("ReadingType"), "Temperature") {
			r.temperature(sd.str("Name"), sd.get("Reading"), sd.obj("Thresholds").obj("UpperCritical").num("Reading"), sd.obj("Status"))
		}
	})
}

func (r *healthReader) powerSubsystem(api *gofish.APIClient, path string) error {
	ps, _, err := getDoc(api, path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, reduce(err))
	}
	redundant := map[string]bool{}
	for _, x := range ps.arr("PowerSupplyRedundancy") {
		rd, _ := x.(map[string]any)
		for _, m := range doc(rd).arr("RedundancyGroup") {
			redundant[strings.TrimSuffix(linkOf(m), "/")] = true
		}
	}
	supplies := ps.link("PowerSupplies")
	if supplies == "" {
		return nil
	}
	return eachMember(api, supplies, func(pd doc) {
		detail := ""
		if strings.EqualFold(pd.str("LineInputStatus"), "LossOfInput") {
			detail = "input lost"
		}
		r.psu(pd.str("Name"), pd.obj("Status"), redundant[strings.TrimSuffix(pd.str("@odata.id"), "/")], nil, detail)
	})
}

// eachMember GETs every member of a collection.
func eachMember(api *gofish.APIClient, coll string, fn func(doc)) error {
	c, _, err := getDoc(api, coll)
	if err != nil {
		return fmt.Errorf("reading %s: %w", coll, reduce(err))
	}
	for _, m := range c.members() {
		d, _, err := getDoc(api, m)
		if err != nil {
			return fmt.Errorf("reading %s: %w", m, reduce(err))
		}
		fn(d)
	}
	return nil
}

func absent(st doc) bool { return strings.EqualFold(st.str("State"), "Absent") }

func numOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func (r *healthReader) temperature(name string, reading any, critical float64, st doc) {
	if absent(st) {
		return
	}
	c, ok := numOf(reading)
	if !ok {
		return
	}
	r.h.HottestC = max(r.h.HottestC, c)
	health := normHealth(st.str("Health"))
	switch {
	case critical > 0 && c >= critical:
		r.add(bmc.HealthCritical, "temperature %s: %g °C, above its critical %g °C", name, c, critical)
	case health == bmc.HealthWarning || health == bmc.HealthCritical:
		r.add(health, "temperature %s: %s (%g °C)", name, health, c)
	}
}

func (r *healthReader) fan(name string, reading any, units string, st doc) {
	if absent(st) {
		return
	}
	r.h.Fans++
	health := normHealth(st.str("Health"))
	if health != bmc.HealthWarning && health != bmc.HealthCritical {
		return
	}
	detail := "no reading"
	if v, ok := numOf(reading); ok {
		if units == "" {
			units = "RPM"
		}
		detail = fmt.Sprintf("%g %s", v, units)
	}
	if health == bmc.HealthCritical {
		r.h.FansFailed++
	}
	r.add(health, "fan %s: %s (%s)", name, health, detail)
}

func (r *healthReader) psu(name string, st doc, redundant bool, voltage any, detail string) {
	if absent(st) {
		if redundant {
			r.h.PSUs++
			r.h.PSUsFailed++
			r.add(bmc.HealthCritical, "power supply %s: Critical (absent from its redundant group)", name)
		}
		return
	}
	r.h.PSUs++
	health := normHealth(st.str("Health"))
	if health != bmc.HealthWarning && health != bmc.HealthCritical {
		return
	}
	if v, ok := numOf(voltage); ok && v == 0 && detail == "" {
		detail = "input lost"
	}
	if health == bmc.HealthCritical {
		r.h.PSUsFailed++
	}
	if detail != "" {
		r.add(health, "power supply %s: %s (%s)", name, health, detail)
	} else {
		r.add(health, "power supply %s: %s", name, health)
	}
}

// maxLogPages bounds how many pages of a log are read in one call.
const maxLogPages = 40

// EventLog reads the system's event log: the log service is found by
// following links, the system's LogServices first, then its managers'
// (iDRAC keeps its SEL as the Manager's: mrlhansen/idrac_exporter#210);
// of a collection's services the one whose LogEntryType is SEL or Event,
// else the first. Entries are read page by page (Members@odata.nextLink)
// in either order the BMC lists them (iDRAC newest first), and a numeric
// Id is zero-padded to 20 digits so ids compare as text.
func (cl *Client) EventLog(ctx context.Context, after string, max int) ([]bmc.LogEntry, error) {
	const op = "read event log"
	var out []bmc.LogEntry
	err := cl.run(ctx, op, func(api *gofish.APIClient, sys string) error {
		d, _, err := getDoc(api, sys)
		if err != nil {
			if statusOf(err) == http.StatusNotFound {
				return fmt.Errorf("%w: %s", ErrSystemNotFound, sys)
			}
			return err
		}
		entries, err := findEntries(api, d)
		if err != nil {
			return err
		}
		if entries == "" {
			return bmc.Errorf(bmc.KindUnsupported, op, "system %s and its managers link no LogServices: the BMC offers no event log over Redfish", sys)
		}
		all, err := readEntries(api, entries, after)
		if err != nil {
			return err
		}
		out = selectEntries(all, after, max)
		return nil
	})
	return out, err
}

// findEntries returns the Entries link of the event log service ("" none).
func findEntries(api *gofish.APIClient, sysDoc doc) (string, error) {
	colls := []string{sysDoc.link("LogServices")}
	for _, m := range sysDoc.obj("Links").arr("ManagedBy") {
		if p := linkOf(m); p != "" {
			md, _, err := getDoc(api, p)
			if err != nil {
				return "", fmt.Errorf("reading the manager %s: %w", p, reduce(err))
			}
			colls = append(colls, md.link("LogServices"))
		}
	}
	for _, c := range colls {
		if c == "" {
			continue
		}
		cd, _, err := getDoc(api, c)
		if err != nil {
			return "", fmt.Errorf("reading the log services %s: %w", c, reduce(err))
		}
		first := ""
		for _, m := range cd.members() {
			sd, _, err := getDoc(api, m)
			if err != nil {
				return "", fmt.Errorf("reading the log service %s: %w", m, reduce(err))
			}
			e := sd.link("Entries")
			if e == "" {
				continue
			}
			if t := sd.str("LogEntryType"); strings.EqualFold(t, "SEL") || strings.EqualFold(t, "Event") {
				return e, nil
			}
			if first == "" {
				first = e
			}
		}
		if first != "" {
			return first, nil
		}
	}
	return "", nil
}

// padID makes a numeric id comparable as text.
func padID(id string) string {
	if id != "" && strings.Trim(id, "0123456789") == "" && len(id) < 20 {
		return strings.Repeat("0", 20-len(id)) + id
	}
	return id
}

func readEntries(api *gofish.APIClient, link, after string) ([]bmc.LogEntry, error) {
	var out []bmc.LogEntry
	for page := 0; link != "" && page < maxLogPages; page++ {
		d, _, err := getDoc(api, link)
		if err != nil {
			return nil, fmt.Errorf("reading the log entries %s: %w", link, reduce(err))
		}
		seenOld := false
		for _, m := range d.arr("Members") {
			md, _ := m.(map[string]any)
			e := doc(md)
			if e.str("Id") == "" && e.str("Message") == "" {
				// A bare link: the entries are not inline.
				if e, _, err = getDoc(api, linkOf(m)); err != nil {
					return nil, fmt.Errorf("reading a log entry: %w", reduce(err))
				}
			}
			le := bmc.LogEntry{ID: padID(e.str("Id")), Severity: normHealth(e.str("Severity")), Message: e.str("Message")}
			if le.Severity == "" {
				le.Severity = e.str("Severity")
			}
			if t, err := time.Parse(time.RFC3339, e.str("Created")); err == nil {
				le.Created = t
			}
			if after != "" && le.ID <= after {
				seenOld = true
			}
			out = append(out, le)
		}
		// Listing newest first, a page that reached the last entry read
		// holds everything newer: the rest is older.
		if seenOld && len(out) > 1 && out[0].ID > out[len(out)-1].ID {
			break
		}
		link = d.str("Members@odata.nextLink")
	}
	return out, nil
}

// selectEntries keeps the entries after after, oldest first, at most max
// (the oldest of them, so the next call goes on from the last); with
// after "" the newest max.
func selectEntries(all []bmc.LogEntry, after string, max int) []bmc.LogEntry {
	slices.SortStableFunc(all, func(a, b bmc.LogEntry) int { return strings.Compare(a.ID, b.ID) })
	var out []bmc.LogEntry
	for _, e := range all {
		if e.ID > after {
			out = append(out, e)
		}
	}
	if max <= 0 {
		return out
	}
	if after == "" && len(out) > max {
		return out[len(out)-max:]
	}
	if len(out) > max {
		out = out[:max]
	}
	return out
}
