package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOpenAPIMatchesRoutes checks that openapi.json documents exactly the
// routes the server registers, no more and no fewer.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+path] = true
		}
	}
	for _, rt := range routes {
		key := rt.method + " " + rt.pattern
		if !documented[key] {
			t.Errorf("route %s is not in openapi.json", key)
		}
		delete(documented, key)
	}
	for k := range documented {
		t.Errorf("openapi.json documents %s, which no handler serves", k)
	}
}

func TestMergePatch(t *testing.T) {
	var target, patch any
	_ = json.Unmarshal([]byte(`{"a":"b","c":{"d":"e","f":"g"}}`), &target)
	_ = json.Unmarshal([]byte(`{"a":"z","c":{"f":null}}`), &patch)
	got, _ := json.Marshal(mergePatch(target, patch))
	if string(got) != `{"a":"z","c":{"d":"e"}}` {
		t.Fatalf("merge patch: %s", got)
	}
}
