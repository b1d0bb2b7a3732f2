package disk

import (
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// TestDocumentedCompressions: the compressions the API's documents name
// (api.ImageCompressions, quoted in api.DocDeployMethod) are the ones
// Write detects, each from its magic bytes; a qcow2 header is none of
// them. (The write tests show raw and qcow2 images written.)
func TestDocumentedCompressions(t *testing.T) {
	magic := map[compression][]byte{
		compGzip:  {0x1f, 0x8b, 0x08, 0, 0, 0},
		compZstd:  {0x28, 0xb5, 0x2f, 0xfd, 0, 0},
		compXz:    {0xfd, '7', 'z', 'X', 'Z', 0x00},
		compBzip2: []byte("BZh91A"),
	}
	var detected []string
	for c, b := range magic {
		if got := detectCompression(b); got != c {
			t.Errorf("%s magic detected as %s", c, got)
		}
		detected = append(detected, string(c))
	}
	if !sameStrings(detected, api.ImageCompressions()) {
		t.Errorf("the agent detects %q; the API's documents name %q", detected, api.ImageCompressions())
	}
	if got := detectCompression([]byte(qcow2Magic + "\x00\x00")); got != compNone {
		t.Errorf("a qcow2 header is taken for %s compression", got)
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s]--; seen[s] < 0 {
			return false
		}
	}
	return true
}
