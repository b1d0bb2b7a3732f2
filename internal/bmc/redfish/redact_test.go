package redfish

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/testlog"
)

// TestCredentialsNeverInErrors: BMCs that quote the session token or the
// Basic credentials bare (not as a header the redact rules recognise), and
// a password with characters every encoder escapes.
func TestCredentialsNeverInErrors(t *testing.T) {
	const pw = `Pw<Sess>&"q\ 1%/+`
	const token = "SessTok-5e1f0a9d3c"
	basic := base64.StdEncoding.EncodeToString([]byte("admin:" + pw))
	jsonPW, _ := json.Marshal(pw)
	secrets := []string{pw, token, basic, string(jsonPW[1 : len(jsonPW)-1]), url.QueryEscape(pw)}
	for _, sessions := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/redfish/v1/" && sessions:
				_, _ = io.WriteString(w, `{"Systems":{"@odata.id":"/redfish/v1/Systems"},"Links":{"Sessions":{"@odata.id":"/redfish/v1/SessionService/Sessions"}}}`)
			case r.URL.Path == "/redfish/v1/":
				_, _ = io.WriteString(w, `{"Systems":{"@odata.id":"/redfish/v1/Systems"}}`)
			case r.Method == http.MethodPost:
				w.Header().Set("X-Auth-Token", token)
				w.Header().Set("Location", "/redfish/v1/SessionService/Sessions/1")
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, `{"Id":"1"}`)
			default:
				cred := r.Header.Get("X-Auth-Token")
				if cred == "" {
					cred = strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
				}
				w.WriteHeader(http.StatusForbidden)
				msg, _ := json.Marshal(map[string]any{"error": map[string]any{
					"code": "Base.1.8.InsufficientPrivilege", "message": "credential " + cred + " may not read " + r.URL.Path,
				}})
				_, _ = w.Write(msg)
			}
		}))
		var logs testlog.Buffer
		o := newOpener(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		ep := endpoint(srv.URL, "1")
		ep.Password = pw
		_, err := open(t, o, ep).PowerState(context.Background())
		wantKind(t, err, bmc.KindAuth)
		if !strings.Contains(err.Error(), "InsufficientPrivilege") || !strings.Contains(err.Error(), "403") {
			t.Errorf("sessions=%v: the useful part is lost: %v", sessions, err)
		}
		for e := error(err); e != nil; e = errors.Unwrap(e) {
			for _, s := range secrets {
				if strings.Contains(e.Error(), s) || strings.Contains(fmt.Sprintf("%+v", e), s) {
					t.Errorf("sessions=%v: %q shown: %v", sessions, s, e)
				}
			}
		}
		for _, s := range secrets {
			if strings.Contains(logs.String(), s) {
				t.Errorf("sessions=%v: %q in logs", sessions, s)
			}
		}
		srv.Close()
	}
}
