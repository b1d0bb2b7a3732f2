package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

func TestDecodeStrict(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type embedded struct {
		E string `json:"e"`
	}
	type doc struct {
		embedded
		S   string            `json:"s"`
		I8  int8              `json:"i8"`
		U   uint              `json:"u"`
		F   float32           `json:"f"`
		P   *int              `json:"p"`
		M   map[string]string `json:"m"`
		L   []inner           `json:"l"`
		T   *time.Time        `json:"t"`
		Any any               `json:"any"`
		Raw json.RawMessage   `json:"raw"`
	}
	for body, field := range map[string]string{
		`{"s":1}`:                           "s",
		`{"i8":128}`:                        "i8",
		`{"i8":-129}`:                       "i8",
		`{"u":-1}`:                          "u",
		`{"f":1e39}`:                        "f",
		`{"l":[{"n":1},{"n":1.5}]}`:         "l[1].n",
		`{"l":[{"x":1}]}`:                   "l[0].x",
		`{"m":{"a":"1","a":"2"}}`:           "m.a",
		`{"m":{"a":1}}`:                     "m.a",
		`{"e":"1","e":"2"}`:                 "e",
		`{"E":"x"}`:                         "E",
		`{"t":"2030-01-01"}`:                "t",
		`{"t":"2030-01-01T00:00:00+25:00"}`: "t",
		`{"s":null}`:                        "s",
		`{"l":[null]}`:                      "l[0]",
		`{"any":{"k":1,"k":2}}`:             "any.k",
		`5`:                                 "",
		`null`:                              "",
		`{"s":"a"} {"s":"b"}`:               "",
		`{"s":"a"}]`:                        "",
		`{"s" "a"}`:                         "",
		`{"s":"a"`:                          "",
		`[`:                                 "",
		`{"s":"\ud800"}x`:                   "",
	} {
		var v doc
		err := decodeStrict([]byte(body), &v)
		if baremetal.ErrorCode(err) != baremetal.CodeInvalid || baremetal.ErrorField(err) != field {
			t.Errorf("%s: %v (field %q), want invalid on %q", body, err, baremetal.ErrorField(err), field)
		}
	}
	// What is fine: null for pointers, maps, slices and any; exact
	// integers; RFC 3339 times; raw JSON judged by its own type.
	var v doc
	body := `{"p":null,"m":null,"l":null,"any":null,"i8":-128,"u":18446744073709551615,"e":"x",` +
		`"t":"2030-01-31T18:00:00.5+01:00","raw":{"a":[1,{"b":null}]}}`
	if err := decodeStrict([]byte(body), &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if v.I8 != -128 || v.U != 1<<64-1 || v.E != "x" || v.T.UTC().Hour() != 17 || string(v.Raw) != `{"a":[1,{"b":null}]}` {
		t.Errorf("decoded %+v", v)
	}
}

// A merge patch keeps numbers exact: the patch is decoded into any as
// json.Number and re-encoded as written.
func TestMergePatchNumbersExact(t *testing.T) {
	var patch any
	if err := decodeStrict([]byte(`{"properties":{"memory_mb":9007199254740993}}`), &patch); err != nil {
		t.Fatal(err)
	}
	doc, err := toMap(api.NodeCreate{Name: "a", Properties: api.Properties{CPUs: 3}})
	if err != nil {
		t.Fatal(err)
	}
	merged, err := json.Marshal(mergePatch(doc, patch))
	if err != nil {
		t.Fatal(err)
	}
	var out api.NodeCreate
	if err := decodeStrict(merged, &out); err != nil {
		t.Fatalf("%s: %v", merged, err)
	}
	if out.Properties.MemoryMB != 9007199254740993 || out.Properties.CPUs != 3 {
		t.Errorf("after the merge: %+v (from %s)", out.Properties, merged)
	}
}

func TestDecodeDepthBounded(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	var v any
	if err := decodeStrict([]byte(deep), &v); baremetal.ErrorCode(err) != baremetal.CodeInvalid || !strings.Contains(err.Error(), "nested") {
		t.Fatalf("deep nesting: %v", err)
	}
	var n api.NodeCreate
	if err := decodeStrict([]byte(`{"bmc":`+deep[:50]), &n); baremetal.ErrorCode(err) != baremetal.CodeInvalid {
		t.Fatalf("deep nesting in a struct: %v", err)
	}
}

func TestIfMatch(t *testing.T) {
	current := func() (int64, error) { return 7, nil }
	for h, want := range map[string]int64{"": 0, "*": 0, ` * `: 0, `"3"`: 3, `"3", W/"4"`: 3, `"x", "7", "9"`: 7, `W/"1", "7"`: 7} {
		r := httptest.NewRequest("PATCH", "/v1/nodes/x", nil)
		if h != "" {
			r.Header.Set("If-Match", h)
		}
		got, err := ifMatch(r, current)
		if err != nil || got != want {
			t.Errorf("If-Match %s: %d, %v; want %d", h, got, err, want)
		}
	}
	for h, code := range map[string]baremetal.Code{
		`"abc"`: baremetal.CodePrecondition, `W/"7"`: baremetal.CodePrecondition, `"0"`: baremetal.CodePrecondition,
		`"-1"`: baremetal.CodePrecondition, `"07"`: baremetal.CodePrecondition, `"1", "2"`: baremetal.CodePrecondition,
		`7`: baremetal.CodeInvalid, `"7`: baremetal.CodeInvalid, `"a b"`: baremetal.CodeInvalid, `*, "7"`: baremetal.CodeInvalid,
	} {
		r := httptest.NewRequest("PATCH", "/v1/nodes/x", nil)
		r.Header.Set("If-Match", h)
		if _, err := ifMatch(r, current); baremetal.ErrorCode(err) != code {
			t.Errorf("If-Match %s: %v, want %s", h, err, code)
		}
	}
}
