package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Hardware health (issue 31): every system has a Chassis
// (/redfish/v1/Chassis/<system id>, linked from the system's
// Links.Chassis, as iDRAC serves Chassis/System.Embedded.1 beside
// Systems/System.Embedded.1) whose sensors tests can break, and an event
// log. Modelled on the DMTF schemas (Chassis v1, Thermal v1, Power v1,
// ThermalSubsystem v1, PowerSubsystem v1, Fan v1, PowerSupply v1,
// Sensor v1, LogService v1, LogEntry v1):
//
//   - The ComputerSystem's and the Chassis' Status carry Health and
//     HealthRollup: the chassis' the worst of its sensors, the system's
//     the worst of its own Health and the chassis' (unless the test set
//     a rollup with SetHealth).
//   - Sensors: three temperatures (CPU1 Temp, CPU2 Temp, Inlet Temp, with
//     UpperThresholdCritical; Critical at or above it), four fans
//     (Fan1..Fan4, RPM) and two power supplies (PSU1, PSU2, a redundant
//     pair: Redundancy / PowerSupplyRedundancy names both).
//   - Where the sensors are: Thermal and Power (deprecated by the DMTF in
//     2020.4, still what most firmware serves: iDRAC 8/9, iLO 5, XCC,
//     Supermicro before X14), or ThermalSubsystem (Fans collection) and
//     PowerSubsystem (PowerSupplies collection) with the temperatures in
//     the chassis' Sensors collection (ReadingType Temperature), which
//     bmcweb (OpenBMC, redfish-core/lib/thermal_subsystem.hpp), iLO 6
//     (its changelog: ThermalSubsystem in 1.71), Supermicro X14 ("We will
//     follow DMTF spec (2020.4) to deprecate schema Thermal and Power
//     since X14", Redfish User Guide 4.0) and iDRAC 9 7.x (beside
//     Thermal, whose GET fails intermittently on 7.30:
//     bb-Ricardo/check_redfish#195) serve. Some platforms serve only the
//     new resources (mrlhansen/idrac_exporter#151).
//   - The event log: a LogServices collection under the system (the
//     DMTF's mockups: Systems/1/LogServices/Log; OpenBMC's bmcweb:
//     Systems/system/LogServices/EventLog, redfish-core/README.md) or
//     under the Manager (iDRAC 9: Managers/iDRAC.Embedded.1/LogServices/Sel,
//     mrlhansen/idrac_exporter#210), each entry with Id (a number counting
//     from 1), Created, Severity, Message, EntryType. The Entries
//     collection carries its members inline, as iDRAC's Sel and bmcweb's
//     EventLog do; iDRAC lists them newest first, 50 a page with
//     Members@odata.nextLink ?$skip=50 (bb-Ricardo/check_redfish#4,
//     mrlhansen/idrac_exporter#26).
//
// Fault injection: Fleet.SetSensor, SetHealth and AddLogEntry, and the
// control API (POST /sim/systems/{id}/sensors, /health, /log). The state
// file does not keep any of it: a restarted fleet is healthy again.

// HealthQuirks are the ways BMCs differ in where they put health and
// logs. The zero value: Thermal and Power, the log Systems/<id>/LogServices/Log,
// oldest first, one page.
type HealthQuirks struct {
	// NoChassis: the system links no Chassis (the sim serves none).
	NoChassis bool
	// Subsystem: the chassis links ThermalSubsystem, PowerSubsystem and
	// Sensors; Legacy (with Subsystem) also Thermal and Power.
	Subsystem, Legacy bool
	// NoLog: no LogServices anywhere.
	NoLog bool
	// LogOnManager: the log service is the Manager's, not the system's.
	LogOnManager bool
	// LogID is the log service's Id ("" Log); EntryType its entries'
	// ("" Event).
	LogID, EntryType string
	// NewestFirst: Entries lists the newest entry first.
	NewestFirst bool
	// PageSize: Entries shows this many members a page, with a
	// Members@odata.nextLink to the next ($skip); 0: all at once.
	PageSize int
}

// dialectHealth is a dialect's HealthQuirks.
func dialectHealth(d Dialect) HealthQuirks {
	switch d {
	case DialectIDRAC9:
		return HealthQuirks{Subsystem: true, Legacy: true, LogOnManager: true, LogID: "Sel", EntryType: "SEL", NewestFirst: true, PageSize: 50}
	case DialectOpenBMC:
		// bmcweb can be built without the deprecated Thermal and Power;
		// the sim's OpenBMC is such a build, the one dialect with only
		// the new resources.
		return HealthQuirks{Subsystem: true, LogID: "EventLog", EntryType: "Event"}
	}
	return HealthQuirks{Legacy: true}
}

// Sensor kinds for SetSensor.
const (
	SensorTemperature = "temperature"
	SensorFan         = "fan"
	SensorPSU         = "psu"
)

// Sensor is a change of one sensor (SetSensor, POST /sim/systems/{id}/sensors).
type Sensor struct {
	Kind string `json:"kind"` // SensorTemperature, SensorFan, SensorPSU
	Name string `json:"name"` // "CPU1 Temp", "Fan3", "PSU2"
	// Reading: °C of a temperature (its health follows from its critical
	// threshold), RPM of a fan (0 makes it Critical, unless Health says
	// otherwise), the line input voltage of a PSU.
	Reading *float64 `json:"reading,omitempty"`
	// Health of a fan or PSU: OK, Warning, Critical ("" unchanged).
	Health string `json:"health,omitempty"`
	// Absent (PSU): pulled from its bay; false puts it back.
	Absent bool `json:"absent,omitempty"`
}

type simTemp struct {
	name              string
	reading, critical float64
}

type simFan struct {
	name   string
	rpm    float64
	health string
}

type simPSU struct {
	name    string
	health  string
	absent  bool
	voltage float64
}

type simLogEntry struct {
	id       int
	created  time.Time
	severity string
	message  string
}

// healthState is a system's sensors and log; guarded by the system's mu.
type healthState struct {
	health, rollup string // the system's own Health; a forced HealthRollup ("" computed)
	temps          []simTemp
	fans           []simFan
	psus           []simPSU
	log            []simLogEntry
	nextLog        int
}

func newHealth() *healthState {
	h := &healthState{
		health: "OK",
		temps: []simTemp{
			{"CPU1 Temp", 45, 95}, {"CPU2 Temp", 47, 95}, {"Inlet Temp", 24, 47},
		},
		psus:    []simPSU{{"PSU1", "OK", false, 230}, {"PSU2", "OK", false, 230}},
		nextLog: 1,
	}
	for i := 1; i <= 4; i++ {
		h.fans = append(h.fans, simFan{fmt.Sprintf("Fan%d", i), 7200, "OK"})
	}
	h.log = append(h.log, simLogEntry{id: 1, created: time.Now().UTC().Truncate(time.Second), severity: "OK", message: "Log cleared."})
	h.nextLog = 2
	return h
}

func (s *system) healthLocked() *healthState {
	if s.health == nil {
		s.health = newHealth()
	}
	return s.health
}

var healthRank = map[string]int{"OK": 0, "Warning": 1, "Critical": 2}

func worse(a, b string) string {
	if healthRank[b] > healthRank[a] {
		return b
	}
	return a
}

func (t simTemp) healthOf() string {
	if t.critical > 0 && t.reading >= t.critical {
		return "Critical"
	}
	return "OK"
}

func (p simPSU) status() map[string]any {
	if p.absent {
		return map[string]any{"State": "Absent"}
	}
	return map[string]any{"State": "Enabled", "Health": p.health}
}

// chassisHealthLocked is the worst of the chassis' sensors.
func (h *healthState) chassisHealthLocked() string {
	worst := "OK"
	for _, t := range h.temps {
		worst = worse(worst, t.healthOf())
	}
	for _, f := range h.fans {
		worst = worse(worst, f.health)
	}
	for _, p := range h.psus {
		if p.absent {
			worst = worse(worst, "Warning") // redundancy lost
			continue
		}
		worst = worse(worst, p.health)
	}
	return worst
}

// systemStatusLocked is the ComputerSystem's Status.
func (s *system) systemStatusLocked() map[string]any {
	h := s.healthLocked()
	rollup := h.rollup
	if rollup == "" {
		rollup = worse(h.health, h.chassisHealthLocked())
	}
	return map[string]any{"State": "Enabled", "Health": h.health, "HealthRollup": rollup}
}

func (s *system) chassisPath() string { return chassisPath + "/" + s.id }

func (s *system) logServicesPath() string {
	if s.q.Health.LogOnManager {
		return s.mgrPath + "/LogServices"
	}
	return s.path + "/LogServices"
}

func (s *system) logID() string {
	if s.q.Health.LogID != "" {
		return s.q.Health.LogID
	}
	return "Log"
}

// serveChassis serves /redfish/v1/Chassis/<id> and below.
func (f *Fleet) serveChassis(w http.ResponseWriter, r *http.Request, s *system, rest []string) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	hq := s.q.Health
	cp := s.chassisPath()
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.healthLocked()
	chHealth := h.chassisHealthLocked()
	status := map[string]any{"State": "Enabled", "Health": chHealth, "HealthRollup": chHealth}
	notFound := func() {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
	}
	psuLinks := func(base string) []any {
		var out []any
		for i := range h.psus {
			out = append(out, odataID(fmt.Sprintf("%s/%d", base, i)))
		}
		return out
	}
	var d map[string]any
	switch {
	case len(rest) == 0:
		d = map[string]any{
			"@odata.id": cp, "@odata.type": "#Chassis.v1_21_0.Chassis", "Id": s.id, "Name": "Simulated Chassis " + s.id,
			"ChassisType": "RackMount", "Status": status,
			"Links": map[string]any{"ComputerSystems": []any{odataID(s.path)}, "ManagedBy": []any{odataID(s.mgrPath)}},
		}
		if hq.Legacy {
			d["Thermal"] = odataID(cp + "/Thermal")
			d["Power"] = odataID(cp + "/Power")
		}
		if hq.Subsystem {
			d["ThermalSubsystem"] = odataID(cp + "/ThermalSubsystem")
			d["PowerSubsystem"] = odataID(cp + "/PowerSubsystem")
			d["Sensors"] = odataID(cp + "/Sensors")
		}
	case len(rest) == 1 && rest[0] == "Thermal" && hq.Legacy:
		var temps, fans []any
		for i, t := range h.temps {
			temps = append(temps, map[string]any{
				"@odata.id": fmt.Sprintf("%s/Thermal#/Temperatures/%d", cp, i), "MemberId": strconv.Itoa(i), "Name": t.name,
				"ReadingCelsius": t.reading, "UpperThresholdCritical": t.critical,
				"Status": map[string]any{"State": "Enabled", "Health": t.healthOf()},
			})
		}
		for i, fa := range h.fans {
			fans = append(fans, map[string]any{
				"@odata.id": fmt.Sprintf("%s/Thermal#/Fans/%d", cp, i), "MemberId": strconv.Itoa(i), "Name": fa.name,
				"Reading": fa.rpm, "ReadingUnits": "RPM",
				"Status": map[string]any{"State": "Enabled", "Health": fa.health},
			})
		}
		d = map[string]any{"@odata.id": cp + "/Thermal", "@odata.type": "#Thermal.v1_7_0.Thermal", "Id": "Thermal", "Name": "Thermal",
			"Temperatures": temps, "Fans": fans}
	case len(rest) == 1 && rest[0] == "Power" && hq.Legacy:
		var psus []any
		for i, p := range h.psus {
			psus = append(psus, map[string]any{
				"@odata.id": fmt.Sprintf("%s/Power#/PowerSupplies/%d", cp, i), "MemberId": strconv.Itoa(i), "Name": p.name,
				"LineInputVoltage": p.voltage, "PowerSupplyType": "AC", "Status": p.status(),
			})
		}
		d = map[string]any{"@odata.id": cp + "/Power", "@odata.type": "#Power.v1_7_0.Power", "Id": "Power", "Name": "Power",
			"PowerSupplies": psus,
			"PowerControl": []any{map[string]any{"@odata.id": cp + "/Power#/PowerControl/0", "MemberId": "0", "Name": "System Power Control",
				"PowerConsumedWatts": 250, "Status": map[string]any{"State": "Enabled", "Health": "OK"}}},
			"Redundancy": []any{map[string]any{"@odata.id": cp + "/Power#/Redundancy/0", "MemberId": "0", "Name": "PSU Redundancy",
				"Mode": "N+m", "MinNumNeeded": 1, "MaxNumSupported": len(h.psus),
				"RedundancySet": psuLinks(cp + "/Power#/PowerSupplies"), "Status": map[string]any{"State": "Enabled", "Health": psuRedundancy(h)}}},
		}
	case len(rest) >= 1 && rest[0] == "ThermalSubsystem" && hq.Subsystem:
		d = s.thermalSubsystemLocked(cp, rest[1:], status)
	case len(rest) >= 1 && rest[0] == "PowerSubsystem" && hq.Subsystem:
		d = s.powerSubsystemLocked(cp, rest[1:], psuLinks)
	case len(rest) >= 1 && rest[0] == "Sensors" && hq.Subsystem:
		d = s.sensorsLocked(cp, rest[1:])
	}
	if d == nil {
		notFound()
		return
	}
	f.writeDoc(w, http.StatusOK, d, "")
}

// psuRedundancy is the health of the PSU redundancy group: Warning when
// one supply is out, Critical when none is left.
func psuRedundancy(h *healthState) string {
	up := 0
	for _, p := range h.psus {
		if !p.absent && p.health != "Critical" {
			up++
		}
	}
	switch {
	case up == len(h.psus):
		return "OK"
	case up > 0:
		return "Warning"
	}
	return "Critical"
}

func (s *system) thermalSubsystemLocked(cp string, rest []string, status map[string]any) map[string]any {
	h := s.healthLocked()
	base := cp + "/ThermalSubsystem"
	switch {
	case len(rest) == 0:
		return map[string]any{"@odata.id": base, "@odata.type": "#ThermalSubsystem.v1_3_0.ThermalSubsystem", "Id": "ThermalSubsystem",
			"Name": "Thermal Subsystem", "Status": status, "Fans": odataID(base + "/Fans")}
	case len(rest) == 1 && rest[0] == "Fans":
		var ms []any
		for _, fa := range h.fans {
			ms = append(ms, odataID(base+"/Fans/"+fa.name))
		}
		return collection(base+"/Fans", "#FanCollection.FanCollection", "Fan Collection", ms)
	case len(rest) == 2 && rest[0] == "Fans":
		for _, fa := range h.fans {
			if fa.name == rest[1] {
				return map[string]any{"@odata.id": base + "/Fans/" + fa.name, "@odata.type": "#Fan.v1_5_0.Fan", "Id": fa.name, "Name": fa.name,
					"SpeedPercent": map[string]any{"SpeedRPM": fa.rpm, "DataSourceUri": cp + "/Sensors/" + fa.name},
					"Status":       map[string]any{"State": "Enabled", "Health": fa.health}}
			}
		}
	}
	return nil
}

func (s *system) powerSubsystemLocked(cp string, rest []string, psuLinks func(string) []any) map[string]any {
	h := s.healthLocked()
	base := cp + "/PowerSubsystem"
	switch {
	case len(rest) == 0:
		return map[string]any{"@odata.id": base, "@odata.type": "#PowerSubsystem.v1_1_0.PowerSubsystem", "Id": "PowerSubsystem",
			"Name": "Power Subsystem", "Status": map[string]any{"State": "Enabled", "Health": psuRedundancy(h)},
			"PowerSupplies": odataID(base + "/PowerSupplies"),
			"PowerSupplyRedundancy": []any{map[string]any{"RedundancyType": "Failover", "MaxSupportedInGroup": len(h.psus), "MinNeededInGroup": 1,
				"RedundancyGroup": psuLinks(base + "/PowerSupplies"), "Status": map[string]any{"State": "Enabled", "Health": psuRedundancy(h)}}}}
	case len(rest) == 1 && rest[0] == "PowerSupplies":
		return collection(base+"/PowerSupplies", "#PowerSupplyCollection.PowerSupplyCollection", "Power Supply Collection", psuLinks(base+"/PowerSupplies"))
	case len(rest) == 2 && rest[0] == "PowerSupplies":
		i, err := strconv.Atoi(rest[1])
		if err != nil || i < 0 || i >= len(h.psus) {
			return nil
		}
		p := h.psus[i]
		line := "Normal"
		if p.voltage == 0 {
			line = "LossOfInput"
		}
		return map[string]any{"@odata.id": base + "/PowerSupplies/" + rest[1], "@odata.type": "#PowerSupply.v1_5_0.PowerSupply",
			"Id": rest[1], "Name": p.name, "Status": p.status(), "LineInputStatus": line, "PowerSupplyType": "AC"}
	}
	return nil
}

// sensorsLocked serves the chassis' Sensors collection: the temperatures
// (fans and supplies are read through their own resources).
func (s *system) sensorsLocked(cp string, rest []string) map[string]any {
	h := s.healthLocked()
	base := cp + "/Sensors"
	id := func(t simTemp) string { return strings.ReplaceAll(t.name, " ", "_") }
	switch {
	case len(rest) == 0:
		var ms []any
		for _, t := range h.temps {
			ms = append(ms, odataID(base+"/"+id(t)))
		}
		return collection(base, "#SensorCollection.SensorCollection", "Sensor Collection", ms)
	case len(rest) == 1:
		for _, t := range h.temps {
			if id(t) == rest[0] {
				return map[string]any{"@odata.id": base + "/" + id(t), "@odata.type": "#Sensor.v1_7_0.Sensor", "Id": id(t), "Name": t.name,
					"ReadingType": "Temperature", "Reading": t.reading, "ReadingUnits": "Cel",
					"Thresholds": map[string]any{"UpperCritical": map[string]any{"Reading": t.critical}},
					"Status":     map[string]any{"State": "Enabled", "Health": t.healthOf()}}
			}
		}
	}
	return nil
}

// serveLogServices serves <system or manager>/LogServices and below.
func (f *Fleet) serveLogServices(w http.ResponseWriter, r *http.Request, s *system, rest []string) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	base := s.logServicesPath()
	logID := s.logID()
	svc := base + "/" + logID
	var d map[string]any
	switch {
	case len(rest) == 0:
		d = collection(base, "#LogServiceCollection.LogServiceCollection", "Log Service Collection", []any{odataID(svc)})
	case len(rest) == 1 && rest[0] == logID:
		entryType := s.q.Health.EntryType
		if entryType == "" {
			entryType = "Event"
		}
		d = map[string]any{"@odata.id": svc, "@odata.type": "#LogService.v1_3_0.LogService", "Id": logID, "Name": logID + " Log Service",
			"LogEntryType": entryType, "OverWritePolicy": "WrapsWhenFull", "ServiceEnabled": true, "MaxNumberOfRecords": 1024,
			"Entries": odataID(svc + "/Entries"), "Status": map[string]any{"State": "Enabled", "Health": "OK"}}
	case len(rest) == 2 && rest[0] == logID && rest[1] == "Entries":
		d = s.logEntriesDoc(svc+"/Entries", r.URL.Query().Get("$skip"))
	case len(rest) == 3 && rest[0] == logID && rest[1] == "Entries":
		s.mu.Lock()
		for _, e := range s.healthLocked().log {
			if strconv.Itoa(e.id) == rest[2] {
				d = s.logEntryJSON(svc+"/Entries", e)
			}
		}
		s.mu.Unlock()
	}
	if d == nil {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path))
		return
	}
	f.writeDoc(w, http.StatusOK, d, "")
}

func (s *system) logEntryJSON(base string, e simLogEntry) map[string]any {
	entryType := s.q.Health.EntryType
	if entryType == "" {
		entryType = "Event"
	}
	return map[string]any{"@odata.id": fmt.Sprintf("%s/%d", base, e.id), "@odata.type": "#LogEntry.v1_9_0.LogEntry",
		"Id": strconv.Itoa(e.id), "Name": fmt.Sprintf("Log Entry %d", e.id), "Created": e.created.Format(time.RFC3339),
		"Severity": e.severity, "Message": e.message, "EntryType": entryType}
}

func (s *system) logEntriesDoc(base, skipParam string) map[string]any {
	s.mu.Lock()
	entries := slices.Clone(s.healthLocked().log)
	s.mu.Unlock()
	if s.q.Health.NewestFirst {
		slices.Reverse(entries)
	}
	total := len(entries)
	skip, _ := strconv.Atoi(skipParam)
	skip = min(max(skip, 0), total)
	entries = entries[skip:]
	next := ""
	if ps := s.q.Health.PageSize; ps > 0 && len(entries) > ps {
		entries = entries[:ps]
		next = fmt.Sprintf("%s?$skip=%d", base, skip+ps)
	}
	ms := make([]any, len(entries))
	for i, e := range entries {
		ms[i] = s.logEntryJSON(base, e)
	}
	d := collection(base, "#LogEntryCollection.LogEntryCollection", "Log Entry Collection", ms)
	d["Members@odata.count"] = total
	if next != "" {
		d["Members@odata.nextLink"] = next
	}
	return d
}

// SetSensor changes one sensor of a system (id or path): see Sensor.
func (f *Fleet) SetSensor(system string, c Sensor) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	if c.Health != "" {
		if _, ok := healthRank[c.Health]; !ok {
			return fmt.Errorf("sim: health %q: want OK, Warning or Critical", c.Health)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.healthLocked()
	switch c.Kind {
	case SensorTemperature:
		for i := range h.temps {
			if h.temps[i].name == c.Name {
				if c.Reading == nil {
					return fmt.Errorf("sim: temperature %q: no reading", c.Name)
				}
				h.temps[i].reading = *c.Reading
				return nil
			}
		}
	case SensorFan:
		for i := range h.fans {
			if fa := &h.fans[i]; fa.name == c.Name {
				if c.Reading != nil {
					fa.rpm = *c.Reading
					fa.health = "OK"
					if fa.rpm == 0 {
						fa.health = "Critical"
					}
				}
				if c.Health != "" {
					fa.health = c.Health
				}
				return nil
			}
		}
	case SensorPSU:
		for i := range h.psus {
			if p := &h.psus[i]; p.name == c.Name {
				p.absent = c.Absent
				if c.Reading != nil {
					p.voltage = *c.Reading
				}
				if c.Health != "" {
					p.health = c.Health
				}
				return nil
			}
		}
	default:
		return fmt.Errorf("sim: sensor kind %q: want temperature, fan or psu", c.Kind)
	}
	return fmt.Errorf("sim: system %s has no %s %q", s.id, c.Kind, c.Name)
}

// SetHealth sets a system's own Status.Health and, unless rollup is "",
// forces its HealthRollup (else the worst of its health and its chassis').
func (f *Fleet) SetHealth(system, health, rollup string) error {
	s, err := f.lookup(system)
	if err != nil {
		return err
	}
	for _, v := range []string{health, rollup} {
		if _, ok := healthRank[v]; !ok && v != "" {
			return fmt.Errorf("sim: health %q: want OK, Warning or Critical", v)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.healthLocked()
	if health != "" {
		h.health = health
	}
	h.rollup = rollup
	return nil
}

// AddLogEntry adds an entry to a system's event log and returns its Id.
func (f *Fleet) AddLogEntry(system, severity, message string) (string, error) {
	s, err := f.lookup(system)
	if err != nil {
		return "", err
	}
	if _, ok := healthRank[severity]; !ok {
		return "", fmt.Errorf("sim: severity %q: want OK, Warning or Critical", severity)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.healthLocked()
	e := simLogEntry{id: h.nextLog, created: time.Now().UTC().Truncate(time.Second), severity: severity, message: message}
	h.nextLog++
	h.log = append(h.log, e)
	return strconv.Itoa(e.id), nil
}

// controlHealth serves POST /sim/systems/{id}/sensors, /health and /log.
func (f *Fleet) controlHealth(w http.ResponseWriter, r *http.Request, s *system, what string, fail func(int, string)) {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	switch what {
	case "sensors":
		var c Sensor
		if err := dec.Decode(&c); err != nil {
			fail(http.StatusBadRequest, `want {"kind":"fan","name":"Fan3","reading":0,"health":"Critical","absent":false}`)
			return
		}
		if err := f.SetSensor(s.id, c); err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
	case "health":
		var b struct {
			Health string `json:"health"`
			Rollup string `json:"rollup"`
		}
		if err := dec.Decode(&b); err != nil {
			fail(http.StatusBadRequest, `want {"health":"OK","rollup":"Critical"}`)
			return
		}
		if err := f.SetHealth(s.id, b.Health, b.Rollup); err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
	case "log":
		var b struct {
			Severity string `json:"severity"`
			Message  string `json:"message"`
		}
		if err := dec.Decode(&b); err != nil || b.Message == "" {
			fail(http.StatusBadRequest, `want {"severity":"Critical","message":"..."}`)
			return
		}
		id, err := f.AddLogEntry(s.id, b.Severity, b.Message)
		if err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"id": id})
		return
	}
	writeJSON(w, http.StatusOK, s.status())
}
