package redfish

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// frontWith fronts a fleet; hook may answer a request itself (true) or
// let the fleet answer it (false). body is the request body, already read.
func frontWith(t *testing.T, f *sim.Fleet, hook func(w http.ResponseWriter, r *http.Request, body []byte) bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if hook(w, r, body) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func redfishErr(w http.ResponseWriter, status int, id, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": "Base.1.8.GeneralError", "message": "See @Message.ExtendedInfo for more information.",
		"@Message.ExtendedInfo": []any{map[string]any{"MessageId": id, "Message": msg}},
	}})
	_, _ = w.Write(b)
}

// rewriteGET serves the fleet's answer to a GET with edit applied to its
// JSON document.
func rewriteGET(f *sim.Fleet, w http.ResponseWriter, r *http.Request, edit func(m map[string]any)) {
	rec := httptest.NewRecorder()
	f.Handler().ServeHTTP(rec, r)
	var m map[string]any
	body := rec.Body.Bytes()
	if json.Unmarshal(body, &m) == nil {
		edit(m)
		body, _ = json.Marshal(m)
	}
	for k, v := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

var _ = strings.Contains
var _ sync.Mutex
