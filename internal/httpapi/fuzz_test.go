package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// Fuzz targets for what reads untrusted request bodies. The seeds run in
// every `go test`; `make fuzz` explores further.

var decodeSeeds = []string{
	`{"name":"n1","driver":"redfish","resource_class":"gpu","bmc":{"address":"https://10.0.0.5","username":"admin","password":"pw","system_id":"/redfish/v1/Systems/1"},"properties":{"cpus":64}}`,
	`{"name":"n1","name":"n2"}`,
	`{"bmc":{"port":1}}`,
	`{"properties":{"cpus":1.5}}`,
	`{"properties":{"cpus":1e2}}`,
	`{"properties":{"cpus":99999999999999999999}}`,
	`{"maintenance":null}`,
	`{"name":"\ud800"}`,
	`{} {}`,
	`[1]`,
	`"x"`,
	` `,
	`{"name":`,
}

// FuzzDecodeStrict: decoding never panics; every failure is an
// invalid-input (or too-large) error, never an internal one; decoding into
// a generic value (the merge-patch path) succeeds only for valid JSON
// (valid JSON may still be refused: duplicate keys, deep nesting); and a
// decoded NodeCreate survives a round trip unchanged.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var generic any
		err := decodeStrict(body, &generic)
		if err == nil && !json.Valid(body) {
			t.Fatalf("decodeStrict accepted invalid JSON %q", body)
		}
		checkInvalid(t, err)

		var in api.NodeCreate
		err = decodeStrict(body, &in)
		checkInvalid(t, err)
		if err != nil {
			return
		}
		out, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var again api.NodeCreate
		if err := decodeStrict(out, &again); err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		if !reflect.DeepEqual(in, again) {
			t.Fatalf("round trip changed the value: %+v → %s → %+v", in, out, again)
		}
	})
}

func checkInvalid(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if c := baremetal.ErrorCode(err); c != baremetal.CodeInvalid && c != baremetal.CodeTooLarge {
		t.Fatalf("decode error with code %s, want invalid: %v", c, err)
	}
	if baremetal.ErrorMessage(err) == "" {
		t.Fatalf("decode error without a message: %v", err)
	}
}

// FuzzMergePatch checks RFC 7396 properties of mergePatch on any pair of
// JSON documents: a non-object patch replaces the target; an object patch
// removes the keys it nulls, keeps the keys it does not name, and leaves no
// null from the patch behind; applying it twice changes nothing more; and
// the patch itself is never modified (patchNode retries with it).
func FuzzMergePatch(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":"b","c":{"d":"e","f":"g"}}`, `{"a":"z","c":{"f":null}}`},
		{`{"a":1}`, `{"a":{"b":null}}`},
		{`{"a":[1,2]}`, `{"a":[{"b":null}]}`},
		{`[1]`, `{"a":1}`},
		{`{"a":1}`, `null`},
		{`{"a":1}`, `[null]`},
		{`{"bmc":{"address":"https://h","password":"x"}}`, `{"bmc":{"password":"y"},"maintenance":true}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, targetJSON, patchJSON string) {
		var target, patch any
		if json.Unmarshal([]byte(targetJSON), &target) != nil || json.Unmarshal([]byte(patchJSON), &patch) != nil {
			return
		}
		before, _ := json.Marshal(patch)
		orig := deepCopy(target)
		got := mergePatch(deepCopy(target), patch)
		if after, _ := json.Marshal(patch); string(after) != string(before) {
			t.Fatalf("mergePatch modified the patch: %s → %s", before, after)
		}
		if _, err := json.Marshal(got); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
		p, isObj := patch.(map[string]any)
		if !isObj {
			if !reflect.DeepEqual(got, patch) {
				t.Fatalf("a non-object patch must replace the target: got %v", got)
			}
			return
		}
		checkMerged(t, orig, p, got)
		if twice := mergePatch(deepCopy(got), patch); !reflect.DeepEqual(twice, got) {
			t.Fatalf("not idempotent: once %v, twice %v", got, twice)
		}
	})
}

// checkMerged checks one object level of an applied merge patch.
func checkMerged(t *testing.T, target any, p map[string]any, got any) {
	t.Helper()
	res, ok := got.(map[string]any)
	if !ok {
		t.Fatalf("an object patch gave a non-object %v", got)
	}
	tm, _ := target.(map[string]any)
	for k, v := range tm {
		if _, named := p[k]; !named && !reflect.DeepEqual(res[k], v) {
			t.Fatalf("key %q, not in the patch, changed: %v → %v", k, v, res[k])
		}
	}
	for k, v := range p {
		r, present := res[k]
		switch sub := v.(type) {
		case nil:
			if present {
				t.Fatalf("key %q nulled by the patch is still there: %v", k, r)
			}
		case map[string]any:
			checkMerged(t, tm[k], sub, r)
		default:
			if !reflect.DeepEqual(r, v) {
				t.Fatalf("key %q: got %v, want the patch's %v", k, r, v)
			}
		}
	}
}
