package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/agent"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/console"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

// AgentImages makes the deploy agent's per-boot boot media
// (agentboot.Builder): the ISO for virtual media, and the kernel and
// per-boot initramfs for network boots.
type AgentImages interface {
	ISO(ctx context.Context, cfg agent.Config) ([]byte, error)
	Initrd(ctx context.Context, cfg agent.Config) ([]byte, error)
	Kernel() ([]byte, error)
	Cmdline() string
}

// inspectNode boots the deploy agent on a node to report its hardware.
func (s *Server) inspectNode(w http.ResponseWriter, r *http.Request, c service.Caller) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
	jobID, err := s.svc.InspectNode(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.InspectAccepted{JobID: jobID,
		Message: "inspection queued: the node boots the deploy agent and is available again once it has reported its hardware"})
}

// nodeInventory is a node's hardware as the agent last reported it.
func (s *Server) nodeInventory(w http.ResponseWriter, r *http.Request, c service.Caller) {
	n, inv, err := s.svc.NodeInventory(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.NodeInventory{NodeID: n.ID, InspectedAt: inv.InspectedAt.UTC().Format(time.RFC3339)}
	if err := decodeStrict([]byte(inv.Data), &out.Inventory); err != nil {
		s.writeError(w, r, &baremetal.Error{Code: baremetal.CodeInternal, Message: "the stored inventory could not be read", Err: err})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// nodeConsoleLog is the node's recorded console (admin only). With
// ?lines=N only the last N lines.
func (s *Server) nodeConsoleLog(w http.ResponseWriter, r *http.Request, c service.Caller) {
	lines := 0
	if v := r.URL.Query().Get("lines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			s.writeError(w, r, baremetal.FieldErrorf("lines", "lines must be a whole number from 1 to 10000, not %q", v))
			return
		}
		lines = n
	}
	n, log, err := s.svc.NodeConsoleLog(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	text := log.Log
	if lines > 0 {
		if t := console.Tail(text, lines); len(t) > 0 {
			text = strings.Join(t, "\n") + "\n"
		} else {
			text = ""
		}
	}
	writeJSON(w, http.StatusOK, api.NodeConsoleLog{NodeID: n.ID, Recording: log.Recording(time.Now()),
		UpdatedAt: log.UpdatedAt.UTC().Format(time.RFC3339), Log: text})
}

// agentHeartbeat is the deploy agent's report. It is not behind the API's
// token auth: the caller is the agent, holding only its per-boot token.
func (s *Server) agentHeartbeat(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	token, ok := bearerToken(r)
	if !ok {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeUnauthorized, "an Authorization: Bearer <agent token> header is required"))
		return
	}
	var hb api.AgentHeartbeat
	if !s.decode(w, r, &hb) {
		return
	}
	reply, err := s.svc.AgentHeartbeat(r.Context(), token, hb, remoteHost(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

// agentBoot serves one boot's agent media: the ISO to the node's BMC, or
// the kernel and initramfs to its iPXE. The key in the path is the
// credential (BMCs and firmware fetch without our headers); the ISO and
// the initramfs carry the per-boot token by design.
func (s *Server) agentBoot(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	file := r.PathValue("file")
	if s.agentImages == nil || !slices.Contains(api.AgentBootFiles(), file) {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeNotFound, "no such agent image"))
		return
	}
	sess, err := s.svc.AgentSessionForBoot(r.Context(), r.PathValue("id"), r.PathValue("key"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if file != api.AgentISOFile && sess.AgentAddr != "" {
		// A network boot's files are loaded by iPXE before the agent
		// runs: once the agent has reported, nobody needs them, and the
		// initramfs holds the token. (The ISO stays: a BMC may read its
		// virtual media for as long as it is inserted.)
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeNotFound, "no such agent image"))
		return
	}
	cfg := agent.Config{API: s.agentURL, Token: sess.Token, CACerts: s.agentCACerts}
	if sess.Purpose == baremetal.AgentInspect {
		// Whole seconds, rounded up: a wait set below one still listens.
		cfg.LLDPWaitSeconds = int((s.agentLLDPWait + time.Second - 1) / time.Second)
	}
	var (
		img   []byte
		ctype = "application/octet-stream"
	)
	switch file {
	case api.AgentISOFile:
		img, err = s.agentImages.ISO(r.Context(), cfg)
		ctype = "application/x-iso9660-image"
	case api.AgentKernelFile:
		img, err = s.agentImages.Kernel()
	case api.AgentInitrdFile:
		img, err = s.agentImages.Initrd(r.Context(), cfg)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		s.writeError(w, r, &baremetal.Error{Code: baremetal.CodeInternal, Message: "could not build the agent image", Err: err})
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, file, sess.CreatedAt.Truncate(time.Second), bytes.NewReader(img))
}

// agentNetboot is the iPXE script of a machine booting from the network.
// The provisioning network's DHCP hands iPXE this URL; without a query it
// answers a script that asks again with the machine's system UUID and
// MAC, and with them, the script that boots this machine's agent (kernel
// and per-boot initramfs, at the agent URL) or, when no agent boot is
// due for it, one that leaves
// iPXE so the firmware boots the next device (the node's disk). It
// answers text/plain in iPXE's language, errors included: iPXE shows a
// script's echo on the console, and a problem document would only fail
// to parse there.
func (s *Server) agentNetboot(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	q := r.URL.Query()
	if !q.Has("uuid") && !q.Has("mac") {
		// iPXE expands ${...} in a script's commands, not in DHCP's
		// filename. The URLs are absolute: the iPXE builds that firmware
		// and qemu ship fail relative ones with a query ("Operation not
		// supported").
		_, _ = io.WriteString(w, "#!ipxe\nchain --autofree "+s.agentURL+api.AgentNetbootPath+"?uuid=${uuid}&mac=${mac}\n")
		return
	}
	var ids []string
	if id := baremetal.NetbootUUID(q.Get("uuid")); id != "" {
		ids = append(ids, id)
	}
	if id := baremetal.NetbootMAC(q.Get("mac")); id != "" {
		ids = append(ids, id)
	}
	var sess *baremetal.AgentSession
	var err error
	if s.agentImages != nil {
		sess, err = s.svc.AgentSessionForNetboot(r.Context(), ids)
	}
	if s.agentImages == nil || err != nil {
		why := "no deploy agent boot is due for this machine"
		if err != nil && !baremetal.IsCode(err, baremetal.CodeNotFound) {
			why = "the controller cannot boot this machine's agent"
			var be *baremetal.Error
			if errors.As(err, &be) && be.Code != baremetal.CodeInternal {
				why += ": " + be.Message
			}
			s.log.WarnContext(r.Context(), "agent netboot refused", "uuid", q.Get("uuid"), "mac", q.Get("mac"), "err", err)
		}
		// exit hands back to the firmware, which boots the next device.
		_, _ = io.WriteString(w, "#!ipxe\necho baremetal: "+ipxeText(why)+"; booting the next device\nexit 1\n")
		return
	}
	base := s.agentURL + "/v1/agent/boot/" + sess.NodeID + "/" + baremetal.AgentBootKey(sess.Token) + "/"
	s.log.InfoContext(r.Context(), "agent netboot", "node_id", sess.NodeID, "uuid", q.Get("uuid"), "mac", q.Get("mac"))
	_, _ = io.WriteString(w, "#!ipxe\necho baremetal: booting the deploy agent\n"+
		"kernel "+base+api.AgentKernelFile+" initrd="+api.AgentInitrdFile+" "+ipxeText(s.agentImages.Cmdline())+"\n"+
		"initrd "+base+api.AgentInitrdFile+"\n"+
		"boot\n")
}

// ipxeText keeps s to one line without iPXE's setting expansions.
func ipxeText(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", "$", "", "{", "(", "}", ")").Replace(s)
}
