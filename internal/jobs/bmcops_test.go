package jobs

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
)

// echoOpener is a driver that quotes the request in its errors, in the
// encodings BMCs use, without redacting anything itself: the controller's
// boundary with its drivers (bmc.Drivers) must.
type echoOpener struct{ msg string }

func (o echoOpener) Open(context.Context, bmc.Endpoint) (bmc.Client, error) {
	return echoClient{msg: o.msg}, nil
}

type echoClient struct {
	msg  string
	kind bmc.Kind // of its power reads' errors; "" bmc_error
}

func (c echoClient) PowerState(context.Context) (bmc.PowerState, error) {
	return bmc.PowerUnknown, bmc.Errorf(cmp.Or(c.kind, bmc.KindBMCError), "power state", "%s", c.msg)
}

func (c echoClient) SetPower(context.Context, bmc.PowerAction) error {
	return fmt.Errorf("unclassified: %s: %w", c.msg, context.DeadlineExceeded)
}

func (c echoClient) SetBootDevice(context.Context, bmc.BootDevice, bool) error { return nil }

func TestBMCCallRedactsEveryForm(t *testing.T) {
	const pw = `pw<Sess>&"x\ 9%/+`
	key := configdrive.Key("rdy_bmcops")
	driveURL := "http://ctl/v1/instances/i-1/config-drive/" + key + "/config-2.iso"
	jsonPW, _ := json.Marshal(pw)
	forms := []string{
		pw, url.QueryEscape(pw), url.PathEscape(pw), string(jsonPW[1 : len(jsonPW)-1]),
		base64.StdEncoding.EncodeToString([]byte("root:" + pw)), key,
	}
	msg := fmt.Sprintf(`HTTP 400: Base.1.8.PropertyValueFormatError: {"UserName":"root","Password":%s} Authorization: Basic %s form Password=%s path /%s image %s %s %s`,
		jsonPW, forms[4], forms[1], forms[2], url.QueryEscape(driveURL), strings.ReplaceAll(driveURL, "/", `\/`), strings.Repeat("padding ", 100))
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{nodeWork: &nodeWork{cfg: Config{BMC: bmc.Drivers{"redfish": echoOpener{msg}}, BMCTimeout: time.Second}.withDefaults(), metrics: m}}
	n := &baremetal.Node{Name: "n1", Driver: baremetal.DriverRedfish, BMC: baremetal.BMC{Username: "root", Password: pw}}

	_, err = r.readPower(context.Background(), n)
	got := err.Error()
	for _, f := range forms {
		if strings.Contains(got, f) {
			t.Errorf("%q shown in %s", f, got)
		}
	}
	if !strings.HasPrefix(got, "bmc power state: bmc_error: HTTP 400: Base.1.8.PropertyValueFormatError: ") || bmc.KindOf(err) != bmc.KindBMCError {
		t.Errorf("the useful part is lost: %s", got)
	}
	if len(got) > bmc.MaxMessage+len("bmc power state: bmc_error: ") {
		t.Errorf("message not capped: %d bytes", len(got))
	}

	// An unclassified error: classified, redacted, still a deadline.
	err = r.setPower(context.Background(), n, bmc.ActionOn)
	if strings.Contains(err.Error(), pw) || !errors.Is(err, context.DeadlineExceeded) || !isBMCErr(err) {
		t.Errorf("setPower: %v (deadline %v)", err, errors.Is(err, context.DeadlineExceeded))
	}
}
