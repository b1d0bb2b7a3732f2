package httpapi

// RouteInfo is one entry of the route table, for the external tests.
type RouteInfo struct {
	Method, Pattern string
	// Auth: the route needs an API token.
	Auth bool
}

// Routes returns the route table, so that tests are generated from it and
// a new route without a test case fails them.
func Routes() []RouteInfo {
	out := make([]RouteInfo, 0, len(routes))
	for _, rt := range routes {
		out = append(out, RouteInfo{Method: rt.method, Pattern: rt.pattern, Auth: rt.auth})
	}
	return out
}
