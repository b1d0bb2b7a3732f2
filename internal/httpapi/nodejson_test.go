package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// TestNodeJSONIsEncodingJSON holds the hand-written node encoder to what
// encoding/json's Encoder writes, on nodes whose every field (nested ones
// too) is set, left zero or nil at random, with strings that need
// escaping: a field added to api.Node and not to appendNode fails here.
func TestNodeJSONIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var l api.NodeList
		fill(rng, reflect.ValueOf(&l).Elem(), i%4 == 0)
		want := new(bytes.Buffer)
		if err := json.NewEncoder(want).Encode(&l); err != nil {
			t.Fatal(err)
		}
		got := append(appendNodeList(nil, &l), '\n')
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("node list %d:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}

var tricky = []string{"", "a", "node-01", `q"uote`, `back\slash`, "<script>&amp;</script>", "tab\tnl\ncr\r\b\f\x00\x1f\x7f",
	"é ü ß 日本", "\u2028\u2029", "bad\xffutf8\xc3", "emoji 🙂", "/redfish/v1/Systems/1"}

// fill sets v to random values; full sets every field (no nil, no
// zero) so that no field is left out of the comparison.
func fill(rng *rand.Rand, v reflect.Value, full bool) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		ts := []time.Time{time.Unix(rng.Int64N(4e9), 0).UTC(), time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC(),
			time.Date(2026, 12, 6, 10, 0, 0, 120000000, time.FixedZone("x", 3600))}
		v.Set(reflect.ValueOf(ts[rng.IntN(len(ts))]))
		return
	}
	maybeZero := func() bool { return !full && rng.IntN(4) == 0 }
	switch v.Kind() {
	case reflect.String:
		if !maybeZero() {
			s := tricky[rng.IntN(len(tricky))]
			if full && s == "" {
				s = "x"
			}
			v.SetString(s)
		}
	case reflect.Bool:
		v.SetBool(full || rng.IntN(2) == 0)
	case reflect.Int, reflect.Int64:
		if !maybeZero() {
			v.SetInt(rng.Int64N(1<<40) - 1<<20)
			if full && v.Int() == 0 {
				v.SetInt(1)
			}
		}
	case reflect.Float64:
		fs := []float64{0.5, 42, 1e-7, 3.25e22, -17.125, 1e21, 123456789.123}
		if !maybeZero() {
			v.SetFloat(fs[rng.IntN(len(fs))])
		}
	case reflect.Pointer:
		if maybeZero() {
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(rng, p.Elem(), full)
		v.Set(p)
	case reflect.Slice:
		if maybeZero() {
			return
		}
		n := rng.IntN(3)
		if full {
			n++
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(rng, s.Index(i), full && rng.IntN(2) == 0)
		}
		v.Set(s)
	case reflect.Map:
		if maybeZero() {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(4) + 1 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(rng, k, false)
			fill(rng, e, false)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(rng, v.Field(i), full)
			}
		}
	default:
		panic("fill: " + v.Type().String())
	}
}
