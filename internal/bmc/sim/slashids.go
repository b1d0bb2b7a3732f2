package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// TrailingSlashIDs (Options): the fleet writes every @odata.id with a
// trailing slash, /redfish/v1/Systems/1/, as iLO does, while it still
// answers requests with or without one. A client that keys systems by the
// id the BMC serves (or compares ids as strings) sees iLO's spelling.

// slashWriter holds an answer back until the handler is done, then writes
// it, with the ids rewritten when it is a JSON document.
type slashWriter struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (w *slashWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *slashWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// Hijack lets a fault drop the connection (abort) as without the option.
func (w *slashWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	w.hijacked = true
	return hj.Hijack()
}

// flush writes the held answer (nothing after a hijack).
func (w *slashWriter) flush() {
	if w.hijacked || w.status == 0 {
		return
	}
	body := w.body.Bytes()
	if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		if out, ok := withSlashIDs(body); ok {
			body = out
			if w.Header().Get("Content-Length") != "" {
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			}
		}
	}
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(body)
}

// withSlashIDs returns the JSON document b with a slash added to every
// @odata.id that has none; false when b is no JSON.
func withSlashIDs(b []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	out, err := json.Marshal(addSlashes(v))
	if err != nil {
		return nil, false
	}
	return out, true
}

func addSlashes(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "@odata.id" && !strings.HasSuffix(s, "/") {
				v[k] = s + "/"
				continue
			}
			v[k] = addSlashes(x)
		}
	case []any:
		for i, x := range v {
			v[i] = addSlashes(x)
		}
	}
	return v
}
