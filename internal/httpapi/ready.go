package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/configdrive"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

// instanceReady is the booted OS's readiness callback. It is not behind
// the API's token auth: the caller is the instance itself, holding only
// the ready token from its config drive. Any body is ignored (curl and
// wget send different empty ones).
func (s *Server) instanceReady(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
	token, ok := bearerToken(r)
	if !ok {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeUnauthorized,
			"an Authorization: Bearer <ready token> header is required (the token is in the instance's config drive)"))
		return
	}
	if err := s.svc.InstanceReady(r.Context(), r.PathValue("id"), token, remoteHost(r)); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// configDrive serves an instance's config drive to its BMC. The key in the
// path is the credential (BMCs fetch virtual media without our headers).
// http.ServeContent answers HEAD and Range requests, which BMCs use to
// size and page through an image.
func (s *Server) configDrive(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	inst, err := s.svc.InstanceForConfigDrive(r.Context(), r.PathValue("id"), r.PathValue("key"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	network, err := s.svc.NetworkData(r.Context(), inst)
	var invalid *baremetal.Error
	switch {
	case err == nil:
	case errors.As(err, &invalid) && invalid.Code == baremetal.CodeInvalid:
		// Checked against the node's NICs when the instance was created
		// or rebuilt; the node was inspected again since and lost one.
		s.writeError(w, r, &baremetal.Error{Code: baremetal.CodeConflict,
			Message: "could not write the instance's network configuration: " + invalid.Message, Err: err})
		return
	default:
		s.writeError(w, r, err) // the store (unavailable: 503), or a bug (500, logged)
		return
	}
	var buf bytes.Buffer
	err = configdrive.Build(&buf, configdrive.Drive{
		UUID: inst.ID, Name: inst.Name, Hostname: inst.Name, Meta: inst.Metadata, UserData: []byte(inst.UserData),
		ReadyURL: s.publicURL + api.ReadyPath(inst.ID), ReadyToken: inst.ReadyToken, NetworkData: network,
	})
	if err != nil {
		s.writeError(w, r, &baremetal.Error{Code: baremetal.CodeInternal, Message: "could not build the config drive", Err: err})
		return
	}
	w.Header().Set("Content-Type", "application/x-iso9660-image")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, "config-2.iso", inst.UpdatedAt.Truncate(time.Second), bytes.NewReader(buf.Bytes()))
}

func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// logPath is the request path as logs and problem documents show it: a
// config drive's key and an agent image's key are credentials, so they are
// masked.
func logPath(r *http.Request) string {
	p := r.URL.Path
	for _, marker := range []string{"/config-drive/", "/agent/boot/"} {
		p = maskAfter(p, marker)
	}
	return p
}

// maskAfter masks the path segment that holds a key: for a config drive
// the one right after marker, for an agent image the one after the node
// id. Whatever stands there is masked up to the next slash, even when it
// is not a well-formed key: a wrong key is still a guess.
func maskAfter(p, marker string) string {
	i := strings.Index(p, marker)
	if i < 0 {
		return p
	}
	head, rest := p[:i+len(marker)], p[i+len(marker):]
	if marker == "/agent/boot/" {
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			return p
		}
		head, rest = head+rest[:j+1], rest[j+1:]
	}
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		return head + "REDACTED" + rest[j:]
	}
	return head + "REDACTED"
}
