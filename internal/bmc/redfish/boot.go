package redfish

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/redact"
)

// bootForm is one way of writing a boot override, in the order its fields
// are shown in messages.
type bootForm struct {
	enabled, target, mode string
}

func (f bootForm) payload() map[string]any {
	boot := map[string]string{"BootSourceOverrideEnabled": f.enabled}
	if f.target != "" {
		boot["BootSourceOverrideTarget"] = f.target
	}
	if f.mode != "" {
		boot["BootSourceOverrideMode"] = f.mode
	}
	return map[string]any{"Boot": boot}
}

func (f bootForm) String() string {
	s := "Boot.BootSourceOverrideEnabled=" + f.enabled
	if f.target != "" {
		s += " with Boot.BootSourceOverrideTarget=" + f.target
	}
	if f.mode != "" {
		s += " and Boot.BootSourceOverrideMode=" + f.mode
	}
	return s
}

// overrideCleared reports whether s needs no clearing: the override is
// disabled, or it boots from disk every time. The latter is what a cleared
// override means to a machine (boot its own OS), and it is all some BMCs
// can say: sushy-tools reports "Continuous" whatever it was told.
func overrideCleared(s *system) bool {
	switch {
	case strings.EqualFold(s.BootEnabled, "Disabled"):
		return true
	case strings.EqualFold(s.BootEnabled, "Continuous") && strings.EqualFold(s.BootTarget, "Hdd"):
		return true
	}
	return false
}

// clearForms lists the ways to clear the override on s, most standard
// first. Redfish clears with Enabled=Disabled, but dialects differ:
// sushy-tools refuses a PATCH without a target (400, "Missing the
// BootSourceOverrideTarget ...") and lists no "None" target, so a target
// the BMC allows goes with it; a BMC that takes none of the Disabled forms
// gets a persistent boot from disk, which counts as cleared.
func clearForms(s *system) []bootForm {
	advertised := len(s.BootTargets) > 0
	allows := func(target string) bool { return !advertised || containsFold(s.BootTargets, target) }
	var forms []bootForm
	add := func(f bootForm) {
		for _, g := range forms {
			if g == f {
				return
			}
		}
		forms = append(forms, f)
	}
	if advertised {
		if containsFold(s.BootTargets, "None") {
			add(bootForm{enabled: "Disabled", target: "None"})
		} else if allows("Hdd") {
			add(bootForm{enabled: "Disabled", target: "Hdd"})
		}
	}
	add(bootForm{enabled: "Disabled", target: ""})
	if !advertised {
		add(bootForm{enabled: "Disabled", target: "None"})
	}
	if allows("Hdd") {
		add(bootForm{enabled: "Disabled", target: "Hdd"})
		if len(s.BootEnables) == 0 || containsFold(s.BootEnables, "Continuous") {
			add(bootForm{enabled: "Continuous", target: "Hdd"})
		}
	}
	return forms
}

// clearOverride tries each form of clearForms in turn while the BMC
// answers 400 (the form, not the BMC, is wrong) or accepts a form and
// still shows the override when read back (a BMC that ignores Enabled
// alone); any other failure ends the attempts. When every form is refused,
// the error names what was sent and carries the BMC's first answer, which
// usually says which field it wanted.
func clearOverride(ctx context.Context, api *gofish.APIClient, s *system, secrets *redact.Secrets) error {
	if overrideCleared(s) {
		return nil
	}
	var tried []string
	var first error
	for _, f := range clearForms(s) {
		where, err := patchBoot(ctx, api, s, f.payload())
		if err == nil {
			now, rerr := readOverride(api, s, where)
			if rerr != nil {
				return rerr
			}
			if now.unverified || overrideCleared(now) {
				return nil
			}
			tried = append(tried, f.String()+" (accepted, and the override stayed "+showOverride(now)+")")
			s = now
			continue
		}
		if statusOf(err) != http.StatusBadRequest {
			return err
		}
		tried = append(tried, f.String())
		if first == nil {
			first = err
		}
	}
	if first == nil {
		if len(tried) > 0 {
			return &bmc.Error{Kind: bmc.KindRefused, Op: "set boot device",
				Err: fmt.Errorf("clearing the boot override of %s: %w: sent %s", s.Path, errNotApplied, strings.Join(tried, ", then "))}
		}
		return errors.New("clearing the boot override: no form of the request to try")
	}
	// Every form the BMC could want was refused as asked: sending them
	// again will not help, which is what KindRefused tells the caller.
	he, _ := asHTTPError(first, secrets)
	return &bmc.Error{Kind: bmc.KindRefused, Op: "set boot device",
		Err: fmt.Errorf("clearing the boot override of %s: the BMC refused %s: %w", s.Path, strings.Join(tried, ", then "), he)}
}

// patchBoot PATCHes a Boot payload to the system (with its ETag), falling
// back to its @Redfish.Settings resource when the system itself refuses
// (some BMCs take settings only there: iDRAC 10's Boot is read-only on the
// system). It returns where the payload went.
func patchBoot(ctx context.Context, api *gofish.APIClient, s *system, payload any) (string, error) {
	reread := func() (string, error) {
		now, err := getSystem(api, s.Path)
		if err != nil {
			return "", err
		}
		return now.ETag, nil
	}
	err := patchResource(ctx, api, s.Path, payload, s.ETag, reread)
	if err != nil && s.SettingsTarget != "" && s.SettingsTarget != s.Path {
		if st := statusOf(err); st == http.StatusBadRequest || st == http.StatusMethodNotAllowed {
			err = patchResource(ctx, api, s.SettingsTarget, payload, "", func() (string, error) {
				_, hdr, err := getDoc(api, s.SettingsTarget)
				if err != nil {
					return "", err
				}
				return hdr.Get("ETag"), nil
			})
			return s.SettingsTarget, err
		}
	}
	return s.Path, err
}

// reduce turns a BMC answer inside err into an *HTTPError (status and
// Redfish messages, never the raw body) so that context can be wrapped
// around it and kept: classify would otherwise replace a whole chain that
// holds a raw gofish error.
func reduce(err error) error {
	e, _ := asHTTPError(err, nil)
	return e
}

// asHTTPError reduces a BMC answer inside err to an *HTTPError (status and
// Redfish messages only), so that context can be wrapped around it without
// classify replacing the whole chain; other errors come back unchanged.
// secrets are redacted before the BMC's messages are cut to length (nil:
// only the rules that need no secret; classify redacts again later).
func asHTTPError(err error, secrets *redact.Secrets) (error, bool) {
	var he *HTTPError
	if errors.As(err, &he) {
		return he, true
	}
	var rf *schemas.Error
	if errors.As(err, &rf) && rf.HTTPReturnedStatusCode != 0 {
		return httpErrorFrom(rf, secrets), true
	}
	return err, false
}
