package httpapi

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/deployspec"
)

// TestOpenAPIChecksumPattern: the pattern openapi.json gives clients for
// image.checksum accepts exactly what the API's parser accepts.
func TestOpenAPIChecksumPattern(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Pattern string `json:"pattern"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	re, err := regexp.Compile(doc.Components.Schemas["Image"].Properties["checksum"].Pattern)
	if err != nil {
		t.Fatalf("Image.checksum pattern: %v", err)
	}
	h := func(n int) string { return strings.Repeat("aB", n)[:n] }
	for _, in := range []string{
		h(32), h(64), h(128), "md5:" + h(32), "sha256:" + h(64), "SHA512:" + h(128), "Sha256:" + h(64),
		h(40), h(33), "sha256:" + h(40), "md5:" + h(64), "sha1:" + h(40), "sha256:", "", ":" + h(64), h(63) + "g",
	} {
		_, perr := deployspec.ParseChecksum(in)
		if re.MatchString(in) != (perr == nil) {
			t.Errorf("%q: the pattern matches %v, the parser says %v", in, re.MatchString(in), perr)
		}
	}
}
