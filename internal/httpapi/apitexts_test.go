package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// TestOpenAPIQuotesTheAPITexts: openapi.json describes the instance's
// settings whose texts internal/api holds (api.DocRootDevice, ...) with
// those very texts, and the numbers in them are the controller's.
func TestOpenAPIQuotesTheAPITexts(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	texts := map[string]string{"root_device": api.DocRootDevice, "deploy_method": api.DocDeployMethod, "user_data": api.DocUserData}
	for _, schema := range []string{"Instance", "InstanceCreate"} {
		for member, text := range texts {
			if got := doc.Components.Schemas[schema].Properties[member].Description; got != text {
				t.Errorf("openapi.json %s.%s is described as\n  %q\nwant the text of internal/api:\n  %q", schema, member, got, text)
			}
		}
	}
	if api.MaxUserDataKiB<<10 != baremetal.MaxUserData {
		t.Errorf("the API's texts say user_data is at most %d KiB; the controller allows %d bytes", api.MaxUserDataKiB, baremetal.MaxUserData)
	}
}
