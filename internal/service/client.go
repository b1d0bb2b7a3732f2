package service

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// ClientOf says what a request came through, for the events of what it
// changes: "Terraform (terraform-provider-baremetal/0.4.0 terraform/1.5.7)",
// "the CLI (...)", "the dashboard (...)", or "the API (curl/8.5.0)" for any
// other client. header is the request's api.ClientHeader, which wins over
// its User-Agent: a header that is too long or holds anything but
// printable characters is refused (it is ours, and a client that sends it
// gets it right), while a User-Agent, which HTTP libraries make up, is
// cleaned (control and invisible characters become spaces) and cut to
// api.MaxClientLen.
func ClientOf(header, userAgent string) (string, error) {
	raw := userAgent
	if header != "" {
		if len(header) > api.MaxClientLen || !printable(header) {
			return "", baremetal.FieldErrorf(api.ClientHeader,
				"header %s must be at most %d printable characters, such as %s/1.0", api.ClientHeader, api.MaxClientLen, api.ClientDashboard)
		}
		raw = header
	}
	id := clean(raw)
	if id == "" {
		return "the API (no User-Agent)", nil
	}
	product, _, _ := strings.Cut(id, "/")
	product, _, _ = strings.Cut(product, " ")
	switch product {
	case api.ClientProvider:
		return "Terraform (" + id + ")", nil
	case api.ClientCLI:
		return "the CLI (" + id + ")", nil
	case api.ClientDashboard:
		return "the dashboard (" + id + ")", nil
	}
	return "the API (" + id + ")", nil
}

func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// clean turns every run of spaces and unprintable characters (controls,
// bidirectional overrides, invalid UTF-8) into one space, trims, and cuts
// the result to api.MaxClientLen bytes on a character boundary: events and
// logs show it as one plain line.
func clean(s string) string {
	var b strings.Builder
	gap := false
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			gap = b.Len() > 0
			continue
		}
		n := utf8.RuneLen(r)
		if gap {
			n++
		}
		if b.Len()+n > api.MaxClientLen {
			break
		}
		if gap {
			b.WriteByte(' ')
			gap = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
