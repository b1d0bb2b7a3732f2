package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/httpapi"
)

// TestInstanceDeployInputs: the API refuses every image checksum and
// size_gb hint the deploy agent would refuse (each used to pass, and cost
// an agent boot to fail), and an image URL longer than a BMC address may
// be, with a problem naming the field, on both stores (issue #26, item
// 24). What the agent takes, the API takes.
func TestInstanceDeployInputs(t *testing.T) {
	hex := func(n int) string { return strings.Repeat("ab", n)[:n] }
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The agent on: deploy_method image (root_device) is allowed.
			e := newEnv(t, open, func(o *httpapi.Options) { o.Service.EnableAgent() })
			create := func(inst, image, rootDevice string) resp {
				t.Helper()
				body := fmt.Sprintf(`{"name":%q,"resource_class":"gpu","image":%s`, inst, image)
				if rootDevice != "" {
					body += `,"deploy_method":"image","root_device":` + rootDevice
				}
				return e.do("POST", "/v1/instances", e.member, body+"}")
			}
			for _, c := range []struct {
				name, image, rootDevice string
				field, detail           string
			}{
				{"sha256 with 40 digits", `{"url":"https://i/x","checksum":"sha256:` + hex(40) + `"}`, "", "image.checksum", "a sha256 digest has 64 hex digits, not 40"},
				{"bare 40 digits", `{"url":"https://i/x","checksum":"` + hex(40) + `"}`, "", "image.checksum", "has 40 hex digits"},
				{"md5 with 64 digits", `{"url":"https://i/x","checksum":"md5:` + hex(64) + `"}`, "", "image.checksum", "a md5 digest has 32 hex digits, not 64"},
				{"bare 33 digits", `{"url":"https://i/x","checksum":"` + hex(33) + `"}`, "", "image.checksum", "has 33 hex digits"},
				{"unknown algorithm", `{"url":"https://i/x","checksum":"sha1:` + hex(40) + `"}`, "", "image.checksum", `algorithm "sha1"`},
				{"size banana", `{"url":"https://i/x"}`, `{"size_gb":"banana"}`, "root_device.size_gb", `"banana"`},
				{"size -1", `{"url":"https://i/x"}`, `{"size_gb":"-1"}`, "root_device.size_gb", `"-1"`},
				{"size <= 5", `{"url":"https://i/x"}`, `{"size_gb":"<= 5"}`, "root_device.size_gb", `"<= 5"`},
				{"size 0", `{"url":"https://i/x"}`, `{"size_gb":"0"}`, "root_device.size_gb", `"0"`},
				{"url of 512 KiB", `{"url":"https://i/` + strings.Repeat("a", 512<<10) + `"}`, "", "image.url", "at most 2048 bytes"},
			} {
				r := create("bad", c.image, c.rootDevice)
				if r.status != 400 {
					t.Errorf("%s: status %d, want 400: %.300s", c.name, r.status, r.body)
					continue
				}
				if p := r.problem(t); p.Field != c.field || !strings.Contains(p.Detail, c.detail) || !strings.Contains(p.Detail, c.field) {
					t.Errorf("%s: field %q detail %q; want field %q and a detail naming it and saying %q", c.name, p.Field, p.Detail, c.field, c.detail)
				}
			}
			// What the agent takes passes.
			for i, c := range []struct{ image, rootDevice string }{
				{`{"url":"https://i/x","checksum":"sha256:` + hex(64) + `"}`, `{"size_gb":">= 100"}`},
				{`{"url":"https://i/x","checksum":"` + strings.ToUpper(hex(32)) + `"}`, `{"size_gb":"100"}`},
				{`{"url":"https://i/` + strings.Repeat("a", 2000) + `","checksum":"SHA512:` + hex(128) + `"}`, ""},
			} {
				// No node is available: a valid create gets past validation
				// to the scheduler (409), an invalid one would be a 400.
				if r := create(fmt.Sprintf("good-%d", i), c.image, c.rootDevice); r.status == 400 {
					t.Errorf("valid input %d refused: %s", i, r.body)
				}
			}
		})
	}
}
