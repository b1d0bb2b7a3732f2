package api

import "time"

// Address pools (issue 28):
//
//	GET    /v1/ip-pools                     ?limit=&cursor= → IPPoolList
//	POST   /v1/ip-pools                     IPPoolCreate → 201 IPPool (admin)
//	GET    /v1/ip-pools/{id-or-name}        → IPPool, ETag
//	PATCH  /v1/ip-pools/{id-or-name}        IPPoolUpdate → IPPool (admin; If-Match)
//	DELETE /v1/ip-pools/{id-or-name}        → 204 (admin; If-Match; 409 while it holds addresses)
//	GET    /v1/ip-pools/{id}/allocations    ?limit=&cursor= → IPAllocationList (admin)

// IPRange is an inclusive range of addresses of a pool.
type IPRange struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// IPPool is an address pool as the API shows it. Every role reads pools
// (an instance's network names them); only an admin writes them.
type IPPool struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// CIDR is the subnet: IPv4, or IPv6 of /64 or smaller.
	CIDR string `json:"cidr"`
	// Gateway ("" = none) is inside CIDR and never allocated.
	Gateway string `json:"gateway"`
	// Ranges are the addresses handed out, ordered and disjoint; none:
	// the whole CIDR but its network and broadcast addresses (IPv4) or
	// its subnet-router anycast address (IPv6). The gateway never is.
	Ranges        []IPRange `json:"ranges"`
	DNSServers    []string  `json:"dns_servers"`
	SearchDomains []string  `json:"search_domains"`
	Description   string    `json:"description"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	Version       int64     `json:"version"`
}

// IPPoolCreate is the body of POST /v1/ip-pools.
type IPPoolCreate struct {
	Name          string    `json:"name"`
	CIDR          string    `json:"cidr"`
	Gateway       string    `json:"gateway,omitempty"`
	Ranges        []IPRange `json:"ranges,omitempty"`
	DNSServers    []string  `json:"dns_servers,omitempty"`
	SearchDomains []string  `json:"search_domains,omitempty"`
	Description   string    `json:"description,omitempty"`
}

// IPPoolUpdate is the body of PATCH /v1/ip-pools/{id}: a member left out
// is unchanged ("" and [] clear one). The cidr never changes. A change of
// ranges or gateway that would leave held addresses out of the pool is a
// 409 naming them.
type IPPoolUpdate struct {
	Name          *string    `json:"name,omitempty"`
	Gateway       *string    `json:"gateway,omitempty"`
	Ranges        *[]IPRange `json:"ranges,omitempty"`
	DNSServers    *[]string  `json:"dns_servers,omitempty"`
	SearchDomains *[]string  `json:"search_domains,omitempty"`
	Description   *string    `json:"description,omitempty"`
}

// IPPoolList is a page of pools.
type IPPoolList struct {
	Items      []IPPool `json:"items"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// IPAllocation is an address a pool holds: for an instance on a node, or
// (instance_id empty) for a node still being cleaned after its instance
// was deleted, until the cleanup is done.
type IPAllocation struct {
	PoolID     string    `json:"pool_id"`
	Address    string    `json:"address"`
	InstanceID string    `json:"instance_id,omitempty"`
	NodeID     string    `json:"node_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// IPAllocationList is a page of a pool's allocations, in address order.
type IPAllocationList struct {
	Items      []IPAllocation `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty"`
}
