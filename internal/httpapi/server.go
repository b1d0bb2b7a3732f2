// Package httpapi serves the controller's REST API v1: JSON in and out,
// bearer-token auth with roles, RFC 9457 problem documents for every
// error, ETag/If-Match, cursor pagination, and an OpenAPI document.
package httpapi

import (
	"cmp"
	"context"
	_ "embed"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/ui"
)

// JobLister lists durable jobs for the admin jobs API.
type JobLister interface {
	ListJobs(ctx context.Context, nodeID, state string) ([]api.Job, error)
}

// Server is the HTTP API.
type Server struct {
	svc     *service.Service
	jobs    JobLister
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics
	outage  *outage
	// publicURL is how booted instances reach the API (ready callbacks).
	publicURL string
	// agentImages makes the deploy agent's ISOs; nil: none served.
	agentImages AgentImages
	// agentURL is how booted nodes reach the API (the agent's heartbeats).
	agentURL string
	// agentCACerts are the PEM certificates the agent trusts (Options).
	agentCACerts string
	// agentLLDPWait is how long an inspection's agent listens for LLDP
	// (Options).
	agentLLDPWait time.Duration
	// consoleOpener serves interactive consoles (nil: none).
	consoleOpener Consoles
	// consoleTokenCheck is how often a console session checks that its
	// token still holds.
	consoleTokenCheck time.Duration
	consoles          consoleSessions
}

// Options configure a Server.
type Options struct {
	Service  *service.Service
	Jobs     JobLister
	Logger   *slog.Logger
	Registry *prometheus.Registry // nil: a private one
	// PublicURL is the API's base URL as BMCs and booted instances reach
	// it (scheme://host:port, no trailing slash).
	PublicURL string
	// AgentImages makes the deploy agent's per-boot ISOs (nil: the
	// controller serves none, and inspection is refused).
	AgentImages AgentImages
	// AgentURL is the API's base URL as booted nodes reach it, when that
	// differs from PublicURL (empty: PublicURL).
	AgentURL string
	// AgentCACerts are PEM certificates the agent is to trust besides the
	// system's (a private CA of the controller or the image servers);
	// each boot's config carries them.
	AgentCACerts string
	// AgentLLDPWait is how long the agent booted for an inspection
	// listens for its switches' LLDP frames before it reports (0: it
	// does not listen); deploys and cleanups never wait for them.
	AgentLLDPWait time.Duration
	// Consoles serves the nodes' interactive consoles (nil: the console
	// route answers 503).
	Consoles Consoles
	// ConsoleTokenCheck is how often an interactive console session
	// checks that its token was not revoked and has not expired
	// (default 5 s): a revoked token's session closes within it.
	ConsoleTokenCheck time.Duration
}

type route struct {
	method, pattern string
	auth            bool
	h               func(*Server, http.ResponseWriter, *http.Request, service.Caller)
}

// routes is the one list of endpoints; the OpenAPI test checks that
// openapi.json documents exactly these.
var routes = []route{
	{"GET", "/v1/nodes", true, (*Server).listNodes},
	{"POST", "/v1/nodes", true, (*Server).createNode},
	{"GET", "/v1/nodes/{id}", true, (*Server).getNode},
	{"PATCH", "/v1/nodes/{id}", true, (*Server).patchNode},
	{"DELETE", "/v1/nodes/{id}", true, (*Server).deleteNode},
	{"GET", "/v1/nodes/{id}/events", true, (*Server).listEvents},
	{"POST", "/v1/nodes/{id}/power", true, (*Server).powerNode},
	{"POST", "/v1/nodes/{id}/inspect", true, (*Server).inspectNode},
	{"GET", "/v1/nodes/{id}/inventory", true, (*Server).nodeInventory},
	{"GET", "/v1/nodes/{id}/console/log", true, (*Server).nodeConsoleLog},
	{"GET", "/v1/nodes/{id}/console", true, (*Server).nodeConsole},
	{"GET", "/v1/capacity", true, (*Server).getCapacity},
	{"GET", "/v1/instances", true, (*Server).listInstances},
	{"POST", "/v1/instances", true, (*Server).createInstance},
	{"GET", "/v1/instances/{id}", true, (*Server).getInstance},
	{"PATCH", "/v1/instances/{id}", true, (*Server).patchInstance},
	{"POST", "/v1/instances/{id}/rebuild", true, (*Server).rebuildInstance},
	{"DELETE", "/v1/instances/{id}", true, (*Server).deleteInstance},
	{"POST", "/v1/instances/{id}/ready", false, (*Server).instanceReady},
	{"GET", "/v1/instances/{id}/config-drive/{key}/config-2.iso", false, (*Server).configDrive},
	{"POST", "/v1/agent/heartbeat", false, (*Server).agentHeartbeat},
	{"GET", "/v1/agent/boot/{id}/{key}/{file}", false, (*Server).agentBoot},
	{"GET", "/v1/agent/netboot", false, (*Server).agentNetboot},
	{"GET", "/v1/tokens", true, (*Server).listTokens},
	{"POST", "/v1/tokens", true, (*Server).createToken},
	{"DELETE", "/v1/tokens/{id}", true, (*Server).deleteToken},
	{"GET", "/v1/quotas/{project}", true, (*Server).getQuota},
	{"PUT", "/v1/quotas/{project}", true, (*Server).putQuota},
	{"GET", "/v1/jobs", true, (*Server).listJobs},
	{"GET", "/v1/metrics/nodes", true, (*Server).nodeMetrics},
	{"GET", "/v1/ip-pools", true, (*Server).listIPPools},
	{"POST", "/v1/ip-pools", true, (*Server).createIPPool},
	{"GET", "/v1/ip-pools/{id}", true, (*Server).getIPPool},
	{"PATCH", "/v1/ip-pools/{id}", true, (*Server).patchIPPool},
	{"DELETE", "/v1/ip-pools/{id}", true, (*Server).deleteIPPool},
	{"GET", "/v1/ip-pools/{id}/allocations", true, (*Server).listIPAllocations},
	{"GET", "/healthz", false, (*Server).healthz},
	{"GET", "/readyz", false, (*Server).readyz},
	{"GET", "/openapi.json", false, (*Server).openapi},
	{"GET", "/metrics", false, nil}, // served by promhttp
}

// monitorRoutes are the only routes a monitor token opens (keyed like
// the route table): closed by default, so a route added later stays
// closed to monitors until it is listed here, and the service never has
// to tell a monitor from a member of the project "".
var monitorRoutes = map[string]bool{"GET /v1/nodes": true, "GET /v1/metrics/nodes": true}

// New builds the API handler.
func New(o Options) *Server {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Server{svc: o.Service, jobs: o.Jobs, log: log, mux: http.NewServeMux(), metrics: newMetrics(reg),
		publicURL: strings.TrimSuffix(o.PublicURL, "/"), agentImages: o.AgentImages,
		agentURL: strings.TrimSuffix(cmp.Or(o.AgentURL, o.PublicURL), "/"), agentCACerts: o.AgentCACerts,
		agentLLDPWait: o.AgentLLDPWait, consoleOpener: o.Consoles, consoleTokenCheck: cmp.Or(o.ConsoleTokenCheck, 5*time.Second)}
	s.outage = newOutage(log, o.Service.Ready)
	for _, rt := range routes {
		rt := rt
		pattern := rt.method + " " + rt.pattern
		if rt.h == nil {
			s.mux.Handle(pattern, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			continue
		}
		s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			var c service.Caller
			if rt.auth {
				var err error
				if c, err = s.authenticate(r); err != nil {
					s.writeError(w, r, err)
					return
				}
				if c.Monitor() && !monitorRoutes[pattern] {
					s.writeError(w, r, baremetal.Errorf(baremetal.CodeForbidden, "a monitor token may only list nodes (GET /v1/nodes) and read the per-node metrics (GET /v1/metrics/nodes)"))
					return
				}
			}
			rt.h(s, w, r, c)
		})
	}
	// The dashboard: static files that call this same API with the
	// user's token (outside routes: it is not part of the API contract).
	s.mux.Handle("GET "+ui.Prefix, ui.Handler())
	s.mux.Handle("GET /{$}", http.RedirectHandler(ui.Prefix, http.StatusFound))
	// Unknown paths and wrong methods get problem documents too: 405 with
	// an Allow header when the path exists under other methods.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := s.allowed(r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.writeError(w, r, baremetal.Errorf(baremetal.CodeMethodNotAllowed, "%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
			return
		}
		s.writeError(w, r, baremetal.Errorf(baremetal.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	return s
}

// allowed lists the methods some route serves for r's path.
func (s *Server) allowed(r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	return allow
}

func (s *Server) authenticate(r *http.Request) (service.Caller, error) {
	secret, ok := bearerToken(r)
	if !ok {
		// A browser's WebSocket cannot carry an Authorization header.
		secret, ok = consoleToken(r)
	}
	if !ok {
		return service.Caller{}, baremetal.Errorf(baremetal.CodeUnauthorized, "an Authorization: Bearer <token> header is required")
	}
	c, err := s.svc.Authenticate(r.Context(), secret)
	if err != nil {
		return c, err
	}
	c.Client, err = service.ClientOf(r.Header.Get(api.ClientHeader), r.UserAgent())
	return c, err
}

// ServeHTTP logs and measures every request, and recovers from panics so
// one bad request never takes the controller down.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			s.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", logPath(r), "panic", p)
			if !sw.wrote {
				s.writeError(sw, r, baremetal.Errorf(baremetal.CodeInternal, "internal error"))
			}
		}
		_, pattern := s.mux.Handler(r)
		s.metrics.observe(pattern, sw.status, time.Since(start))
		if sw.status >= 500 || r.Method != http.MethodGet {
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", append(logAttrs(r, sw.status), slog.Duration("took", time.Since(start)))...)
		}
	}()
	if !canonicalPath(r.URL.Path) {
		s.writeError(sw, r, baremetal.Errorf(baremetal.CodeNotFound, "no route for %s %s: a path may not have empty, \".\" or \"..\" segments", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(sw, r)
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController and the WebSocket upgrade reach
// the connection (deadlines, hijacking).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

type metrics struct {
	requests *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "baremetal_http_request_duration_seconds",
		Help:    "API request latency by route and status.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 5},
	}, []string{"route", "code"})}
	_ = reg.Register(m.requests)
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, http.StatusText(status)).Observe(d.Seconds())
}

//go:embed openapi.json
var openapiDoc []byte

func (s *Server) openapi(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openapiDoc)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request, _ service.Caller) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.svc.Ready(ctx); err != nil {
		if !store.IsUnavailable(err) && r.Context().Err() == nil {
			// A ping that did not answer in time: as unreachable as a
			// refused connection.
			err = store.Unavailable("readyz", err)
		}
		s.writeError(w, r, &baremetal.Error{Code: baremetal.CodeUnavailable, Message: "store is not reachable", Err: err})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
