package redfish

import (
	"sort"
	"strings"

	"github.com/stmcginnis/gofish"
)

// Allowable values of an action's parameter come inline
// (<Param>@Redfish.AllowableValues on the action), only through the
// action's @Redfish.ActionInfo resource (OpenBMC, AMI), or both; and real
// BMCs write them oddly: a single string instead of a list, or two values
// run together into one string (a Supermicro X12 was read to say
// "GracefulShutdownGracefulRestart"). allowableValues reads every form.

// allowableValues returns the values a parameter of an action allows:
// the union of the inline list and the ActionInfo's, with values run
// together split against known (the values the caller can use, in their
// standard spelling). Nothing advertised gives nil: the caller then
// assumes the standard values. An ActionInfo that cannot be read counts
// as advertising nothing.
func allowableValues(api *gofish.APIClient, action doc, param string, known []string) []string {
	var raw []string
	raw = append(raw, action.strs(param+"@Redfish.AllowableValues")...)
	if s := action.str(param + "@Redfish.AllowableValues"); s != "" {
		raw = append(raw, s) // one string where a list belongs
	}
	if info := relPath(action.str("@Redfish.ActionInfo")); info != "" {
		raw = append(raw, actionInfoValues(api, info, param)...)
	}
	var out []string
	for _, v := range raw {
		for _, w := range splitRunTogether(v, known) {
			if !containsFold(out, w) {
				out = append(out, w)
			}
		}
	}
	return out
}

// actionInfoValues reads a parameter's AllowableValues from an ActionInfo
// resource; failures leave it empty.
func actionInfoValues(api *gofish.APIClient, path, param string) []string {
	d, _, err := getDoc(api, path)
	if err != nil {
		return nil
	}
	for _, p := range d.arr("Parameters") {
		pd, _ := p.(map[string]any)
		if strings.EqualFold(doc(pd).str("Name"), param) {
			vals := doc(pd).strs("AllowableValues")
			if s := doc(pd).str("AllowableValues"); s != "" {
				vals = append(vals, s)
			}
			return vals
		}
	}
	return nil
}

// splitRunTogether splits s into known values when it is several of them
// written without separators (or with spaces or commas between them);
// anything else comes back whole. Longer known values are tried first, so
// "ForceOnForceOff" does not stop at "On".
func splitRunTogether(s string, known []string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	for _, k := range known {
		if strings.EqualFold(s, k) {
			return []string{k}
		}
	}
	byLen := append([]string(nil), known...)
	sort.SliceStable(byLen, func(i, j int) bool { return len(byLen[i]) > len(byLen[j]) })
	var out []string
	rest := s
	for rest != "" {
		rest = strings.TrimLeft(rest, " ,;|")
		if rest == "" {
			break
		}
		matched := false
		for _, k := range byLen {
			if len(rest) >= len(k) && strings.EqualFold(rest[:len(k)], k) {
				out = append(out, k)
				rest = rest[len(k):]
				matched = true
				break
			}
		}
		if !matched {
			return []string{s}
		}
	}
	return out
}

// allResetTypes is every ComputerSystem.Reset ResetType of the standard.
var allResetTypes = []string{
	"On", "ForceOff", "GracefulShutdown", "GracefulRestart", "ForceRestart", "Nmi",
	"ForceOn", "PushPowerButton", "PowerCycle", "Suspend", "Pause", "Resume", "FullPowerCycle",
}
