package redfish

import (
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
	enabled, target string
}

func (f bootForm) payload() map[string]any {
	boot := map[string]string{"BootSourceOverrideEnabled": f.enabled}
	if f.target != "" {
		boot["BootSourceOverrideTarget"] = f.target
	}
	return map[string]any{"Boot": boot}
}

func (f bootForm) String() string {
	s := "Boot.BootSourceOverrideEnabled=" + f.enabled
	if f.target != "" {
		s += " with Boot.BootSourceOverrideTarget=" + f.target
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
			add(bootForm{"Disabled", "None"})
		} else if allows("Hdd") {
			add(bootForm{"Disabled", "Hdd"})
		}
	}
	add(bootForm{"Disabled", ""})
	if !advertised {
		add(bootForm{"Disabled", "None"})
	}
	if allows("Hdd") {
		add(bootForm{"Disabled", "Hdd"})
		if len(s.BootEnables) == 0 || containsFold(s.BootEnables, "Continuous") {
			add(bootForm{"Continuous", "Hdd"})
		}
	}
	return forms
}

// clearOverride tries each form of clearOverride in turn while the BMC
// answers 400 (the form, not the BMC, is wrong); any other outcome ends
// the attempts. When every form is refused, the error names what was sent
// and carries the BMC's first answer, which usually says which field it
// wanted.
func clearOverride(api *gofish.APIClient, s *system, secrets *redact.Secrets) error {
	if overrideCleared(s) {
		return nil
	}
	var tried []string
	var first error
	for _, f := range clearForms(s) {
		err := patchBoot(api, s, f.payload())
		if err == nil {
			return nil
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
		return errors.New("clearing the boot override: no form of the request to try")
	}
	// Every form the BMC could want was refused as asked: sending them
	// again will not help, which is what KindRefused tells the caller.
	he, _ := asHTTPError(first, secrets)
	return &bmc.Error{Kind: bmc.KindRefused, Op: "set boot device",
		Err: fmt.Errorf("clearing the boot override of %s: the BMC refused %s: %w", s.Path, strings.Join(tried, ", then "), he)}
}

// patchBoot PATCHes a Boot payload to the system, falling back to its
// @Redfish.Settings resource when the system itself refuses (some BMCs
// take settings only there).
func patchBoot(api *gofish.APIClient, s *system, payload any) error {
	err := patch(api, s.Path, payload, s.ETag)
	if err != nil && s.SettingsTarget != "" && s.SettingsTarget != s.Path {
		if st := statusOf(err); st == http.StatusBadRequest || st == http.StatusMethodNotAllowed {
			err = patch(api, s.SettingsTarget, payload, "")
		}
	}
	return err
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
