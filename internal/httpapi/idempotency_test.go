package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
)

// A create sent again under the same Idempotency-Key (its answer was
// lost) gets the object made the first time, not a name conflict; the
// same key with another request is refused; keys are each token's own.
func TestIdempotentCreates(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, open)
			body := nodeBody("idem-1")
			first := e.do("POST", "/v1/nodes", adminSecret, body, "Idempotency-Key", "idk_node-1")
			again := e.do("POST", "/v1/nodes", adminSecret, body, "Idempotency-Key", "idk_node-1")
			if first.status != 201 || again.status != 201 {
				t.Fatalf("statuses %d, %d: %s %s", first.status, again.status, first.body, again.body)
			}
			var a, b api.Node
			_ = json.Unmarshal(first.body, &a)
			_ = json.Unmarshal(again.body, &b)
			if a.ID == "" || a.ID != b.ID {
				t.Fatalf("the replay made another node: %s vs %s", a.ID, b.ID)
			}
			var list api.NodeList
			e.mustJSON("GET", "/v1/nodes", adminSecret, "", 200, &list)
			if len(list.Items) != 1 {
				t.Fatalf("%d nodes after a replayed create, want 1", len(list.Items))
			}
			// Without the key the same request is a name conflict, as ever.
			if r := e.do("POST", "/v1/nodes", adminSecret, body); r.status != 409 {
				t.Fatalf("keyless repeat: %d %s", r.status, r.body)
			}
			// The same key with another body is refused, naming the header.
			r := e.do("POST", "/v1/nodes", adminSecret, nodeBody("idem-2"), "Idempotency-Key", "idk_node-1")
			if p := r.problem(t); r.status != 400 || p.Field != "Idempotency-Key" || !strings.Contains(p.Detail, "another request") {
				t.Fatalf("key reused for another body: %d %+v", r.status, p)
			}
			// A malformed key is refused before anything happens.
			if r := e.do("POST", "/v1/nodes", adminSecret, nodeBody("idem-3"), "Idempotency-Key", "has space"); r.status != 400 {
				t.Fatalf("malformed key: %d %s", r.status, r.body)
			}

			// Instances: a member's replay too; another token's same key is
			// another key.
			e.makeAvailable(a.ID)
			inst := fmt.Sprintf(`{"name":"web","node_id":%q,"image":{"url":"https://images.example/x.iso"}}`, a.ID)
			i1 := e.do("POST", "/v1/instances", e.member, inst, "Idempotency-Key", "idk_shared")
			i2 := e.do("POST", "/v1/instances", e.member, inst, "Idempotency-Key", "idk_shared")
			if i1.status != 201 || i2.status != 201 {
				t.Fatalf("instance statuses %d, %d: %s %s", i1.status, i2.status, i1.body, i2.body)
			}
			var x, y api.Instance
			_ = json.Unmarshal(i1.body, &x)
			_ = json.Unmarshal(i2.body, &y)
			if x.ID == "" || x.ID != y.ID {
				t.Fatalf("the replay made another instance: %s vs %s", x.ID, y.ID)
			}
			if r := e.do("POST", "/v1/nodes", adminSecret, nodeBody("idem-4"), "Idempotency-Key", "idk_shared"); r.status != 201 {
				t.Fatalf("the admin's own idk_shared: %d %s", r.status, r.body)
			}
		})
	}
}
