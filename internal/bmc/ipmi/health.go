package ipmi

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	ipmiclient "github.com/bougou/go-ipmi/pkg/client"
	"github.com/bougou/go-ipmi/pkg/command/sensor"
	"github.com/bougou/go-ipmi/pkg/command/storage"
	"github.com/bougou/go-ipmi/pkg/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// Hardware health (issue 31) over IPMI: the sensors of the BMC's SDR
// repository and the entries of its System Event Log.

var (
	_ bmc.HealthGetter   = (*Client)(nil)
	_ bmc.EventLogReader = (*Client)(nil)
)

// Bounds on what one call reads. A BMC's SDR repository holds tens to a
// few hundred records and changes only with firmware or hardware, so it
// is read once and kept (see sdrCache); each Health call then costs one
// Get SDR Repository Info and one Get Sensor Reading per sensor.
const (
	// sdrTTL is how long a BMC's sensor list is kept before it is read
	// again even though the repository's timestamps did not move (some
	// BMCs never set them).
	sdrTTL = 10 * time.Minute
	// maxSDRRecords and maxSELRecords bound a walk of the repository or
	// the log (a broken next-record chain must not loop).
	maxSDRRecords = 1024
	maxSELRecords = 4096
)

// sdrCache is a BMC's sensor list, with what identified the repository
// when it was read. It lives on bmcConn (one per BMC address), so it
// outlives sessions, and is used only under bmcConn's lock.
type sdrCache struct {
	readAt         time.Time
	added, erased  time.Time
	records        uint16
	sensors        []*sdrSensor
	byOwnerAndName map[[2]uint8]string // {owner, sensor number} -> name, for SEL messages
}

// sdrSensor is one sensor of a full or compact sensor record, with its
// thresholds as the sensor gave them when the repository was read.
type sdrSensor struct {
	types.Sensor // name, number, type, unit, conversion factors
	owner, lun   uint8
	thresholds   *sensor.GetSensorThresholdsResponse
}

// sensorCtx addresses a sensor's commands to the controller that owns it.
func (s *sdrSensor) ctx(ctx context.Context) context.Context {
	return ipmiclient.WithCommandContext(ctx, (&ipmiclient.CommandContext{}).WithResponderAddr(s.owner).WithResponderLUN(s.lun))
}

// sensorsOf returns the BMC's sensors, from conn's cache when the
// repository has not changed (same record count and addition and erase
// times) and the cache is younger than sdrTTL. conn must be locked.
func sensorsOf(ctx context.Context, cli *ipmiclient.Client, conn *bmcConn) (*sdrCache, error) {
	info, err := cli.GetSDRRepoInfo(ctx)
	if err != nil {
		if cc, ok := completionCode(err); ok && (cc == uint8(types.CodeInvalidCommand) || cc == uint8(types.CodeIllegalCommand)) {
			return nil, bmc.Errorf(bmc.KindUnsupported, "read health", "the BMC has no SDR repository (Get SDR Repository Info: %v)", err)
		}
		return nil, fmt.Errorf("get SDR repository info: %w", err)
	}
	if c := conn.sdr; c != nil && time.Since(c.readAt) < sdrTTL && c.records == info.RecordCount &&
		c.added.Equal(info.MostRecentAdditionTime) && c.erased.Equal(info.MostRecentEraseTime) {
		return c, nil
	}
	c := &sdrCache{readAt: time.Now(), added: info.MostRecentAdditionTime, erased: info.MostRecentEraseTime,
		records: info.RecordCount, byOwnerAndName: map[[2]uint8]string{}}
	if info.RecordCount == 0 {
		conn.sdr = c
		return c, nil
	}
	id := uint16(0)
	for range maxSDRRecords {
		res, err := cli.GetSDR(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("get SDR record %#04x: %w", id, err)
		}
		// A record go-ipmi cannot parse (an OEM type, a vendor's
		// mistake) is skipped, not the repository.
		if sdr, err := types.ParseSDR(res.RecordData, res.NextRecordID); err == nil {
			if s := sensorOf(sdr); s != nil {
				if s.HasAnalogReading && s.EventReadingType.IsThreshold() && s.SDRRecordType == types.SDRRecordTypeFullSensor {
					th, err := cli.GetSensorThresholds(s.ctx(ctx), s.Number)
					switch {
					case err == nil:
						s.thresholds = th
					case ctx.Err() != nil:
						return nil, err
					}
					// A sensor that gives no thresholds is still read;
					// its status bits say which it crossed.
				}
				c.sensors = append(c.sensors, s)
				c.byOwnerAndName[[2]uint8{s.owner, s.Number}] = s.Name
			}
		}
		if res.NextRecordID == 0xffff || res.NextRecordID == id {
			break
		}
		id = res.NextRecordID
	}
	conn.sdr = c
	return c, nil
}

// sensorOf is the sensor of a full or compact sensor record (nil: another
// record type).
func sensorOf(sdr *types.SDR) *sdrSensor {
	if sdr == nil || sdr.RecordHeader == nil {
		return nil
	}
	s := &sdrSensor{}
	s.SDRRecordType = sdr.RecordHeader.RecordType
	s.HasAnalogReading = sdr.HasAnalogReading()
	var gen types.GeneratorID
	switch sdr.RecordHeader.RecordType {
	case types.SDRRecordTypeFullSensor:
		f := sdr.Full
		gen = f.GeneratorID
		s.Number, s.Name = uint8(f.SensorNumber), strings.TrimSpace(string(f.IDStringBytes))
		s.SensorUnit, s.SensorType, s.EventReadingType = f.SensorUnit, f.SensorType, f.SensorEventReadingType
		s.Threshold.LinearizationFunc, s.Threshold.ReadingFactors = f.LinearizationFunc, f.ReadingFactors
	case types.SDRRecordTypeCompactSensor:
		f := sdr.Compact
		gen = f.GeneratorID
		s.Number, s.Name = uint8(f.SensorNumber), strings.TrimSpace(string(f.IDStringBytes))
		s.SensorUnit, s.SensorType, s.EventReadingType = f.SensorUnit, f.SensorType, f.SensorEventReadingType
	default:
		return nil
	}
	s.owner, s.lun = gen.OwnerID(), gen.LUN()
	if s.Name == "" {
		s.Name = fmt.Sprintf("#%#02x", s.Number)
	}
	return s
}

var healthRank = map[string]int{bmc.HealthOK: 0, bmc.HealthWarning: 1, bmc.HealthCritical: 2}

type healthReason struct{ health, text string }

type healthReader struct {
	h       bmc.Health
	reasons []healthReason
	read    int // sensors that gave a reading
}

func (r *healthReader) add(health, format string, args ...any) {
	r.reasons = append(r.reasons, healthReason{health, fmt.Sprintf(format, args...)})
	if healthRank[health] > healthRank[r.h.State] {
		r.h.State = health
	}
}

// Health reads every sensor of the SDR repository (Get Sensor Reading)
// and judges it: a threshold sensor by the thresholds it crossed (its
// status bits, and its reading against the thresholds it gave), critical
// and non-recoverable ones Critical, non-critical ones Warning; a power
// supply (sensor type 08h) by its states, failure or input lost Critical,
// predictive failure or a configuration error Warning. Temperatures give
// HottestC; fans (threshold sensors of type 04h) and present power
// supplies are counted, failed when Critical. A sensor the BMC says is
// absent, not scanned or not yet read is left out; State is "" when no
// sensor gave a reading.
func (c *Client) Health(ctx context.Context) (bmc.Health, error) {
	conn, err := c.o.conn(c.t)
	if err != nil {
		return bmc.Health{}, bmc.Wrap(bmc.KindUnreachable, "read health", err)
	}
	var out bmc.Health
	err = c.do(ctx, "read health", func(ctx context.Context, cli *ipmiclient.Client) error {
		cache, err := sensorsOf(ctx, cli, conn) // conn is locked by do
		if err != nil {
			return err
		}
		r := &healthReader{}
		for _, s := range cache.sensors {
			res, err := cli.GetSensorReading(s.ctx(ctx), s.Number)
			if err != nil {
				if _, isCC := completionCode(err); isCC && ctx.Err() == nil {
					continue // absent or unreadable sensor: nothing to judge
				}
				return fmt.Errorf("get sensor reading of %s: %w", s.Name, err)
			}
			if res.SensorScanningDisabled || res.ReadingUnavailable {
				continue
			}
			r.read++
			switch {
			case s.HasAnalogReading && s.EventReadingType.IsThreshold():
				if err := r.threshold(ctx, cli, s, res); err != nil {
					return err
				}
			case s.SensorType == types.SensorTypePowerSupply && s.EventReadingType == types.EventReadingTypeSensorSpecific:
				r.psu(s, res.ActiveStates)
			}
		}
		if r.read > 0 && r.h.State == "" {
			r.h.State = bmc.HealthOK
		}
		slices.SortFunc(r.reasons, func(a, b healthReason) int {
			if d := healthRank[b.health] - healthRank[a.health]; d != 0 {
				return d
			}
			return strings.Compare(a.text, b.text)
		})
		for _, x := range r.reasons {
			r.h.Reasons = append(r.h.Reasons, x.text)
		}
		out = r.h
		return nil
	})
	return out, err
}

// kindOf names a sensor's type as Reasons do.
func kindOf(t types.SensorType) string {
	switch t {
	case types.SensorTypeTemperature:
		return "temperature"
	case types.SensorTypeFan:
		return "fan"
	case types.SensorTypePowerSupply:
		return "power supply"
	}
	return strings.ToLower(t.String())
}

func unitOf(s *sdrSensor) string {
	switch s.SensorUnit.BaseUnit {
	case types.SensorUnitType_DegreesC:
		return "°C"
	case types.SensorUnitType_DegreesF:
		return "°F"
	}
	return s.SensorUnit.String()
}

func (r *healthReader) threshold(ctx context.Context, cli *ipmiclient.Client, s *sdrSensor, res *sensor.GetSensorReadingResponse) error {
	conv := s.Sensor
	if conv.Threshold.LinearizationFunc.IsNonLinear() {
		// Non-linear sensors give their factors per reading (§36.2).
		f, err := cli.GetSensorReadingFactors(s.ctx(ctx), s.Number, res.Reading)
		if err != nil {
			return fmt.Errorf("get sensor reading factors of %s: %w", s.Name, err)
		}
		conv.Threshold.ReadingFactors = f.ReadingFactors
	}
	v := conv.ConvertReading(res.Reading)
	switch s.SensorType {
	case types.SensorTypeTemperature:
		c := v
		if s.SensorUnit.BaseUnit == types.SensorUnitType_DegreesF {
			c = (v - 32) * 5 / 9
		}
		r.h.HottestC = max(r.h.HottestC, c)
	case types.SensorTypeFan:
		r.h.Fans++
	}
	th := s.thresholds
	if th == nil {
		th = &sensor.GetSensorThresholdsResponse{}
	}
	// Worst first; the first crossed one is the reason.
	levels := []struct {
		crossed, readable bool
		raw               uint8
		upper             bool
		name, health      string
	}{
		{res.Above_UNR, th.UNR_Readable, th.UNR_Raw, true, "non-recoverable", bmc.HealthCritical},
		{res.Above_UCR, th.UCR_Readable, th.UCR_Raw, true, "critical", bmc.HealthCritical},
		{res.Below_LNR, th.LNR_Readable, th.LNR_Raw, false, "non-recoverable", bmc.HealthCritical},
		{res.Below_LCR, th.LCR_Readable, th.LCR_Raw, false, "critical", bmc.HealthCritical},
		{res.Above_UNC, th.UNC_Readable, th.UNC_Raw, true, "non-critical", bmc.HealthWarning},
		{res.Below_LNC, th.LNC_Readable, th.LNC_Raw, false, "non-critical", bmc.HealthWarning},
	}
	unit := unitOf(s)
	for _, l := range levels {
		limit := conv.ConvertReading(l.raw)
		crossed := l.crossed || (l.readable && ((l.upper && v >= limit) || (!l.upper && v <= limit)))
		if !crossed {
			continue
		}
		side := "below"
		if l.upper {
			side = "above"
		}
		if l.readable {
			r.add(l.health, "%s %s: %g %s, %s its %s %g %s", kindOf(s.SensorType), s.Name, v, unit, side, l.name, limit, unit)
		} else {
			r.add(l.health, "%s %s: %g %s, %s its %s threshold", kindOf(s.SensorType), s.Name, v, unit, side, l.name)
		}
		if s.SensorType == types.SensorTypeFan && l.health == bmc.HealthCritical {
			r.h.FansFailed++
		}
		return nil
	}
	return nil
}

// psu judges a power supply sensor's states (IPMI v2.0 table 42-3).
func (r *healthReader) psu(s *sdrSensor, st types.Mask_DiscreteEvent) {
	problems := []struct {
		on           bool
		text, health string
	}{
		{st.State_1, "failure detected", bmc.HealthCritical},
		{st.State_3, "input lost", bmc.HealthCritical},
		{st.State_4, "input lost or out of range", bmc.HealthCritical},
		{st.State_2, "predictive failure", bmc.HealthWarning},
		{st.State_5, "input out of range", bmc.HealthWarning},
		{st.State_6, "configuration error", bmc.HealthWarning},
	}
	present := st.State_0
	worst, texts := "", []string(nil)
	for _, p := range problems {
		if p.on {
			present = true
			texts = append(texts, p.text)
			if healthRank[p.health] > healthRank[worst] {
				worst = p.health
			}
		}
	}
	if !present {
		return // an empty bay
	}
	r.h.PSUs++
	if worst == "" {
		return
	}
	if worst == bmc.HealthCritical {
		r.h.PSUsFailed++
	}
	r.add(worst, "power supply %s: %s (%s)", s.Name, worst, strings.Join(texts, ", "))
}

// selIDWidth pads SEL record ids (16 bits) so that they compare as text.
const selIDWidth = 5

func selID(id uint16) string { return fmt.Sprintf("%0*d", selIDWidth, id) }

// EventLog reads the SEL with Get SEL Entry, one record per exchange
// (go-ipmi's GetSELEntry would ask Get SEL Info for each). With after
// set, the walk starts at that record's successor; if the record is gone
// (the log was cleared) it starts from the first. Entries come in the
// log's order (oldest first), those after after, at most max; with after
// "" the whole log is walked for the newest max. An empty SEL answers
// "record not present", which is no entries. Record ids are zero-padded
// to 5 digits. Severity is go-ipmi's for the event (OK for information;
// OK for the end of a Warning or Critical condition),
// the message "<sensor type> <sensor name>: <event>", with the sensor's
// name from the SDR when Health has read it.
func (c *Client) EventLog(ctx context.Context, after string, max int) ([]bmc.LogEntry, error) {
	const op = "read event log"
	var afterID uint64
	if after != "" {
		var err error
		if afterID, err = strconv.ParseUint(after, 10, 16); err != nil {
			return nil, bmc.Errorf(bmc.KindUnsupported, op, "%q is not an IPMI SEL record id", after)
		}
	}
	conn, err := c.o.conn(c.t)
	if err != nil {
		return nil, bmc.Wrap(bmc.KindUnreachable, op, err)
	}
	var out []bmc.LogEntry
	err = c.do(ctx, op, func(ctx context.Context, cli *ipmiclient.Client) error {
		out = nil
		var names map[[2]uint8]string
		if conn.sdr != nil { // conn is locked by do
			names = conn.sdr.byOwnerAndName
		}
		start, cleared := uint16(0), false
		// Record id 0 is no record's (it asks for the first): after
		// it, everything.
		if afterID != 0 {
			res, err := getSELEntry(ctx, cli, uint16(afterID))
			switch {
			case err == nil && res.NextRecordID == 0xffff:
				return nil // nothing newer
			case err == nil:
				start = res.NextRecordID
			case isNotPresent(err):
				// Cleared since: everything there is, is newer, whatever
				// its id (a cleared SEL numbers its records from 1 again).
				cleared = true
			default:
				return fmt.Errorf("get SEL entry %d: %w", afterID, err)
			}
		}
		id := start
		for range maxSELRecords {
			res, err := getSELEntry(ctx, cli, id)
			if err != nil {
				if isNotPresent(err) && id == start {
					return nil // empty log
				}
				return fmt.Errorf("get SEL entry %d: %w", id, err)
			}
			if e, ok := logEntry(res.Data, names); ok && (after == "" || cleared || e.ID > selID(uint16(afterID))) {
				out = append(out, e)
				if after != "" && max > 0 && len(out) >= max {
					return nil
				}
			}
			if res.NextRecordID == 0xffff || res.NextRecordID == id {
				break
			}
			id = res.NextRecordID
		}
		if after == "" && max > 0 && len(out) > max {
			out = out[len(out)-max:]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func getSELEntry(ctx context.Context, cli *ipmiclient.Client, id uint16) (*storage.GetSELEntryResponse, error) {
	res := &storage.GetSELEntryResponse{}
	err := cli.Exchange(ctx, &storage.GetSELEntryRequest{RecordID: id, ReadBytes: 0xff}, res)
	return res, err
}

func isNotPresent(err error) bool {
	cc, ok := completionCode(err)
	return ok && cc == uint8(types.CodeRequestedDataNotPresent)
}

// selTimeInit: SEL timestamps up to this are seconds since the BMC's
// initialisation, not since 1970 (IPMI v2.0 §37.1).
const selTimeInit = 0x20000000

func logEntry(data []byte, names map[[2]uint8]string) (bmc.LogEntry, bool) {
	if len(data) != 16 {
		return bmc.LogEntry{}, false
	}
	sel, err := types.ParseSEL(data)
	if err != nil {
		return bmc.LogEntry{}, false
	}
	e := bmc.LogEntry{ID: selID(sel.RecordID), Severity: bmc.HealthOK}
	if std := sel.Standard; std != nil {
		if std.Timestamp.Unix() > selTimeInit {
			e.Created = std.Timestamp.UTC()
		}
		e.Severity = severityOf(std.EventSeverity())
		// go-ipmi rates the end of some failures (a power supply's
		// failure deasserted) as the failure itself; a condition that
		// ends is a recovery. Deasserting a normal state (presence) keeps
		// go-ipmi's rating.
		if std.EventDir && severityOf(std.EventReadingType.EventSeverity(std.SensorType, std.EventData, false)) != bmc.HealthOK {
			e.Severity = bmc.HealthOK
		}
		name := names[[2]uint8{std.GeneratorID.OwnerID(), uint8(std.SensorNumber)}]
		if name == "" {
			name = fmt.Sprintf("#%#02x", uint8(std.SensorNumber))
		}
		what := std.EventString()
		if what == "" {
			what = fmt.Sprintf("event type %#02x, offset %d", uint8(std.EventReadingType), std.EventData.EventData1&0x0f)
		}
		if std.EventDir {
			what += " (deasserted)"
		}
		e.Message = fmt.Sprintf("%s %s: %s", std.SensorType, name, what)
		return e, true
	}
	if ts := sel.OEMTimestamped; ts != nil && ts.Timestamp.Unix() > selTimeInit {
		e.Created = ts.Timestamp.UTC()
	}
	e.Message = fmt.Sprintf("OEM record, type %#02x", uint8(sel.RecordType))
	return e, true
}

func severityOf(s types.EventSeverity) string {
	switch s {
	case types.EventSeverityCritical:
		return bmc.HealthCritical
	case types.EventSeverityWarning, types.EventSeverityDegraded, types.EventSeverityNonFatal:
		return bmc.HealthWarning
	}
	return bmc.HealthOK
}
