package httpapi

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
)

// ipPoolOut renders a pool; its lists are [] rather than null.
func ipPoolOut(p *baremetal.IPPool) api.IPPool {
	out := api.IPPool{ID: p.ID, Name: p.Name, CIDR: p.CIDR.String(), Ranges: []api.IPRange{},
		DNSServers: append([]string{}, p.DNSServers...), SearchDomains: append([]string{}, p.SearchDomains...),
		Description: p.Description, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, Version: p.Version}
	if p.Gateway.IsValid() {
		out.Gateway = p.Gateway.String()
	}
	for _, r := range p.Ranges {
		out.Ranges = append(out.Ranges, api.IPRange{Start: r.Start.String(), End: r.End.String()})
	}
	return out
}

// poolAddr parses an address of a pool's input ("" = none).
func poolAddr(field, s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	return baremetal.ParsePoolAddr(field, s)
}

// poolRanges parses a pool's ranges, naming the field of a bad one.
func poolRanges(in []api.IPRange) ([]baremetal.IPRange, error) {
	var out []baremetal.IPRange
	for i, r := range in {
		f := fmt.Sprintf("ranges[%d]", i)
		start, err := baremetal.ParsePoolAddr(f+".start", r.Start)
		if err != nil {
			return nil, err
		}
		end, err := baremetal.ParsePoolAddr(f+".end", r.End)
		if err != nil {
			return nil, err
		}
		out = append(out, baremetal.IPRange{Start: start, End: end})
	}
	return out, nil
}

func (s *Server) listIPPools(w http.ResponseWriter, r *http.Request, c service.Caller) {
	p, err := page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	pools, next, err := s.svc.ListIPPools(r.Context(), c, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.IPPoolList{Items: make([]api.IPPool, 0, len(pools)), NextCursor: next}
	for _, p := range pools {
		out.Items = append(out.Items, ipPoolOut(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createIPPool(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() { // before reading the body
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may manage ip pools"))
		return
	}
	o, err := once(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in api.IPPoolCreate
	if !s.decode(w, r, &in) {
		return
	}
	p := baremetal.IPPool{Name: in.Name, DNSServers: in.DNSServers, SearchDomains: in.SearchDomains, Description: in.Description}
	if in.CIDR == "" {
		err = baremetal.FieldErrorf("cidr", "cidr is required (e.g. 10.0.0.0/24 or 2001:db8::/64)")
	} else {
		p.CIDR, err = baremetal.ParsePoolCIDR("cidr", in.CIDR)
	}
	if err == nil {
		p.Gateway, err = poolAddr("gateway", in.Gateway)
	}
	if err == nil {
		p.Ranges, err = poolRanges(in.Ranges)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.svc.CreateIPPoolOnce(r.Context(), c, p, o)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(out.Version))
	w.Header().Set("Location", "/v1/ip-pools/"+out.ID)
	writeJSON(w, http.StatusCreated, ipPoolOut(out))
}

func (s *Server) getIPPool(w http.ResponseWriter, r *http.Request, c service.Caller) {
	p, err := s.svc.GetIPPool(r.Context(), c, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(p.Version))
	writeJSON(w, http.StatusOK, ipPoolOut(p))
}

func (s *Server) ipPoolVersion(r *http.Request, c service.Caller) func() (int64, error) {
	return func() (int64, error) {
		p, err := s.svc.GetIPPool(r.Context(), c, r.PathValue("id"))
		if err != nil {
			return 0, err
		}
		return p.Version, nil
	}
}

func (s *Server) patchIPPool(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may manage ip pools"))
		return
	}
	match, err := ifMatch(r, s.ipPoolVersion(r, c))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Members are pointers (absent: unchanged), so null would be
	// silently ignored: refuse it. "" and [] clear.
	var in api.IPPoolUpdate
	if !s.decodeWith(w, r, &in, true) {
		return
	}
	var gw netip.Addr
	var ranges []baremetal.IPRange
	if in.Gateway != nil {
		if gw, err = poolAddr("gateway", *in.Gateway); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if in.Ranges != nil {
		if ranges, err = poolRanges(*in.Ranges); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	p, err := s.svc.UpdateIPPool(r.Context(), c, r.PathValue("id"), match, func(p *baremetal.IPPool) error {
		if in.Name != nil {
			p.Name = *in.Name
		}
		if in.Description != nil {
			p.Description = *in.Description
		}
		if in.Gateway != nil {
			p.Gateway = gw
		}
		if in.Ranges != nil {
			p.Ranges = ranges
		}
		if in.DNSServers != nil {
			p.DNSServers = *in.DNSServers
		}
		if in.SearchDomains != nil {
			p.SearchDomains = *in.SearchDomains
		}
		return nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(p.Version))
	writeJSON(w, http.StatusOK, ipPoolOut(p))
}

func (s *Server) deleteIPPool(w http.ResponseWriter, r *http.Request, c service.Caller) {
	if !c.Admin() {
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "only an admin may manage ip pools"))
		return
	}
	match, err := ifMatch(r, s.ipPoolVersion(r, c))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.svc.DeleteIPPool(r.Context(), c, r.PathValue("id"), match); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listIPAllocations(w http.ResponseWriter, r *http.Request, c service.Caller) {
	p, err := page(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, next, err := s.svc.ListIPAllocations(r.Context(), c, r.PathValue("id"), p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.IPAllocationList{Items: make([]api.IPAllocation, 0, len(list)), NextCursor: next}
	for _, a := range list {
		out.Items = append(out.Items, api.IPAllocation{PoolID: a.PoolID, Address: a.Address.String(),
			InstanceID: a.InstanceID, NodeID: a.NodeID, CreatedAt: a.CreatedAt})
	}
	writeJSON(w, http.StatusOK, out)
}
