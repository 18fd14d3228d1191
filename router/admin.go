package router

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"

	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/console"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/routes"
)

// Limits of the admin API. docs/admin-api.md states them.
const (
	// MaxAdminBody bounds a request body: a route spec is a few hundred
	// bytes, so anything near this is a mistake or an attack.
	MaxAdminBody = 1 << 20
	// adminRequestTimeout bounds one call into the Service, so a wedged
	// router answers 503 instead of holding the connection for ever.
	adminRequestTimeout = 30 * time.Second
	// adminWriteTimeout must exceed adminRequestTimeout, or the client
	// would see a reset instead of the 503.
	adminWriteTimeout = adminRequestTimeout + 10*time.Second
)

// AdminOptions configure an AdminServer; zero values take the defaults.
type AdminOptions struct {
	// Listen is host:port; default config.DefaultAdminListen. Port 0 picks a free
	// port (see Addr).
	Listen string
	// Token is required on every endpoint but /healthz as
	// "Authorization: Bearer TOKEN"; Start refuses one that
	// config.CheckAdminToken refuses, an empty one first (the daemon
	// generates one when none is configured: AdminToken).
	Token string
	// Names are the host names clients may use in the Host header besides
	// IP addresses, localhost and Listen's host (admin.names).
	Names []string
	// CertFile and KeyFile (PEM) serve the API over TLS.
	CertFile, KeyFile string
	// AllowPlaintext lets Start listen beyond loopback without TLS.
	AllowPlaintext bool
	// Log receives one line per mutating request and server errors.
	Log zerolog.Logger
	// Registry is where /metrics gathers from. Default: a new registry with
	// the Go and process collectors. The route and broker collector is
	// always added to it.
	Registry *prometheus.Registry
	// RouteSeries is how many routes /metrics exports with series of
	// their own (metrics.route_series); every route is in the aggregates.
	// Zero: DefaultRouteSeries; negative: none.
	RouteSeries int
	// Socket, if set, is a Unix socket path on which the API is also
	// served to local processes of this user (the CLI beside the router),
	// without the token and the throttle: the socket is in the private
	// state directory, mode 0600, and on Linux each peer's uid is checked
	// (admin_socket.go).
	Socket string
	// Context is the owner's: the parent of every request's context and of
	// the metrics scrape's call into the Service (a Prometheus collector is
	// given none). Its end cancels requests in progress. Default
	// context.Background(), for owners that keep the server for the
	// process's life and stop it with Close.
	Context context.Context
}

// AdminServer is the admin HTTP+JSON API, the Prometheus endpoint and the
// health probes. It owns one goroutine (serve: the HTTP server), in a group
// started by Start and stopped by Close, which shuts the server down and
// then waits for it.
type AdminServer struct {
	svc     Service
	opts    AdminOptions
	log     zerolog.Logger
	handler http.Handler // the gated API, for TCP clients
	local   http.Handler // the API for the Unix socket: screened, no token
	guard   *guard
	regErr  error // registering the metrics collector failed; Start reports it

	mu     sync.Mutex
	srv    *http.Server // set by Start; guarded by mu
	ln     net.Listener // set by Start; guarded by mu
	lsrv   *http.Server // the Unix socket's, set by Start with Socket; guarded by mu
	closed bool         // Close was called; guarded by mu
	g      *group.Group // serve's; set by Start; guarded by mu
	// served is Serve's error other than ErrServerClosed. Written only by
	// the serve goroutine; read only after its group has stopped.
	served error
}

// NewAdminServer builds the API over svc. It does not listen: call Start.
func NewAdminServer(svc Service, opts AdminOptions) *AdminServer {
	if opts.Listen == "" {
		opts.Listen = config.DefaultAdminListen
	}
	if opts.Context == nil {
		opts.Context = context.Background()
	}
	a := &AdminServer{svc: svc, opts: opts, log: opts.Log.With().Str("component", "admin").Logger()}
	a.guard = newGuard(opts.Token, opts.Listen, opts.Names, a.log)
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if opts.RouteSeries == 0 {
		opts.RouteSeries = DefaultRouteSeries
	}
	if err := reg.Register(newServiceCollector(opts.Context, svc, opts.RouteSeries)); err != nil {
		a.regErr = fmt.Errorf("admin API: register metrics: %w", err)
	}
	mux := a.routes(reg)
	a.handler, a.local = a.guard.wrap(mux), a.guard.wrapLocal(mux)
	return a
}

// Handler is the API's http.Handler, for tests and for embedding in
// another server: the gate is in it (an empty Token lets no request but
// /healthz through); Start's checks of the options and TLS are not.
func (a *AdminServer) Handler() http.Handler { return a.handler }

// Start listens on opts.Listen and serves in the background. A listen
// failure (address in use, bad address), a weak token, an unreadable
// certificate, or a listen beyond loopback in clear without
// AllowPlaintext is returned at once.
func (a *AdminServer) Start() error {
	if a.regErr != nil {
		return a.regErr
	}
	tlsCfg, err := a.checkOptions()
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.srv != nil {
		return errors.New("admin API: Start called twice or after Close")
	}
	tcp, err := net.Listen("tcp", a.opts.Listen)
	if err != nil {
		return fmt.Errorf("admin API: listen on %s: %w", a.opts.Listen, err)
	}
	// Capped before TLS and before a byte is read: idle connections
	// cannot take the process's descriptors (admin_listen.go).
	ln := newLimitListener(tcp, adminMaxConns, adminMaxConnsPerClient, a.log)
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	var local net.Listener
	if a.opts.Socket != "" {
		if local, err = listenSocket(a.opts.Socket); err != nil {
			_ = tcp.Close() // the socket's error is the one to report
			return fmt.Errorf("admin API: %w", err)
		}
	}
	a.ln = ln
	a.g = group.New(a.opts.Context)
	a.srv = a.newServer(a.handler)
	srv := a.srv
	a.g.Go(func(context.Context) { a.serve(srv, ln) }) // ends with Close's Shutdown
	a.log.Info().Str("listen", ln.Addr().String()).Bool("tls", tlsCfg != nil).Msg("admin API listening")
	if local != nil {
		a.lsrv = a.newServer(a.local)
		lsrv := a.lsrv
		a.g.Go(func(context.Context) { a.serve(lsrv, local) })
		a.log.Info().Str("socket", a.opts.Socket).Msg("admin API listening on a Unix socket for the local CLI")
	}
	return nil
}

// newServer is an HTTP server of h with the API's timeouts, its requests'
// contexts under the server's group.
func (a *AdminServer) newServer(h http.Handler) *http.Server {
	base := a.g.Context()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		// net/http's own complaints (malformed requests, handler panics)
		// go to our log rather than the standard logger's stderr.
		ErrorLog:    stdlog.New(a.log, "", 0),
		BaseContext: func(net.Listener) context.Context { return base },
	}
}

// checkOptions applies config's admin rules to the options (the same ones
// check-config applies to the file) and loads the certificate; a nil
// *tls.Config means plain HTTP.
func (a *AdminServer) checkOptions() (*tls.Config, error) {
	o := a.opts
	if o.Token == "" {
		return nil, errors.New("admin API: no token: the API is never served without one (AdminOptions.Token)")
	}
	if err := config.CheckAdminToken(o.Token); err != nil {
		return nil, fmt.Errorf("admin API: token: %w", err)
	}
	if o.CertFile == "" && o.KeyFile == "" {
		if !config.LoopbackListen(o.Listen) && !o.AllowPlaintext {
			return nil, fmt.Errorf("admin API: %s is reachable from other hosts and would carry the token in clear: give a certificate (admin.tls) or allow plaintext", o.Listen)
		}
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("admin API: TLS certificate %s, key %s: %w", o.CertFile, o.KeyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Scheme is how clients reach the API: https with a certificate, else
// http.
func (a *AdminServer) Scheme() string {
	if a.opts.CertFile != "" {
		return "https"
	}
	return "http"
}

// serve runs the HTTP server until Close; the only goroutine AdminServer
// starts.
func (a *AdminServer) serve(srv *http.Server, ln net.Listener) {
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.log.Error().Err(err).Msg("admin API stopped serving")
		a.served = err
	}
}

// Addr is the address listened on (with the real port when Listen asked
// for port 0), or "" before Start.
func (a *AdminServer) Addr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ln == nil {
		return ""
	}
	return a.ln.Addr().String()
}

// Close stops accepting, lets requests in progress finish until ctx ends,
// then drops the rest, and waits for the serve goroutine. It returns the
// error that stopped serving early, if any.
func (a *AdminServer) Close(ctx context.Context) error {
	a.mu.Lock()
	srv, lsrv, g := a.srv, a.lsrv, a.g
	a.closed = true
	a.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := shutdown(ctx, srv)
	if lsrv != nil {
		if lerr := shutdown(ctx, lsrv); err == nil {
			err = lerr
		}
	}
	g.Stop() // serve has returned (Serve ends with Shutdown): this joins it
	if a.served != nil {
		return fmt.Errorf("admin API: serve: %w", a.served)
	}
	return err
}

// shutdown stops srv, letting requests finish until ctx ends, then
// dropping them.
func shutdown(ctx context.Context, srv *http.Server) error {
	if err := srv.Shutdown(ctx); err != nil {
		// Close's own error can only repeat the listener's, already
		// closed by Shutdown.
		_ = srv.Close()
		return fmt.Errorf("admin API: shutdown: %w", err)
	}
	return nil
}

// routes builds the mux, with JSON errors for unknown paths and methods;
// the gate (admin_guard.go) goes in front of it.
func (a *AdminServer) routes(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/routes", a.listRoutes)
	mux.HandleFunc("POST /api/v1/routes", a.addRoute)
	mux.HandleFunc("POST /api/v1/routes/delete", a.deleteRoute)
	mux.HandleFunc("DELETE /api/v1/routes/{id}", a.deleteRouteID)
	mux.HandleFunc("POST /api/v1/routes/flush", a.flushRoutes)
	mux.HandleFunc("GET /api/v1/links", a.listLinks)
	mux.HandleFunc("POST /api/v1/links", a.addLink)
	mux.HandleFunc("POST /api/v1/links/delete", a.deleteLink)
	mux.HandleFunc("GET /api/v1/brokers", a.listBrokers)
	mux.HandleFunc("GET /api/v1/router", a.routerInfo)
	mux.HandleFunc("GET /api/v1/topology", a.topology)
	mux.HandleFunc("GET /api/v1/cluster", a.clusterStatus)
	mux.HandleFunc("GET /api/v1/destinations", a.destinations)
	mux.HandleFunc("POST /api/v1/reload", a.reloadConfig)
	mux.Handle("GET "+console.Prefix, console.Handler())
	mux.Handle("GET /{$}", http.RedirectHandler(console.Prefix, http.StatusFound))
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	return jsonNotFound(mux)
}

// jsonNotFound answers requests no pattern matches with a JSON error
// instead of net/http's plain text, keeping 404 and 405 (with Allow) apart.
func jsonNotFound(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r) // not h: ServeHTTP also sets the path values
			return
		}
		rec := &statusRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		switch rec.status {
		case http.StatusMethodNotAllowed:
			allow := rec.header.Get("Allow")
			w.Header().Set("Allow", allow)
			writeError(w, rec.status, fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
		case http.StatusNotFound:
			writeCode(w, rec.status, api.CodeNoEndpoint, fmt.Sprintf("no such endpoint: %s %s (see docs/admin-api.md)", r.Method, r.URL.Path))
		default: // a redirect (path cleaning): pass it on as is
			for k, v := range rec.header {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.status)
		}
	})
}

// statusRecorder keeps the status and headers net/http's fallback handlers
// write, dropping their plain-text body.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header { return s.header }
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
func (s *statusRecorder) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(p), nil
}

func (a *AdminServer) listRoutes(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("limit") && !q.Has("after") {
		writeJSON(w, http.StatusOK, nonNil(a.svc.Routes())) // the whole list, as before paging
		return
	}
	limit, err := pageLimit(q.Get("limit"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	page, next, partial, err := a.svc.RoutesPage(q.Get("after"), limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, api.RoutePage{Routes: nonNil(page), Next: next, Partial: partial})
}

// DefaultPageLimit is a page's size when only after is given.
const DefaultPageLimit = 1000

// pageLimit reads ?limit: 1..routes.MaxPageLimit, DefaultPageLimit when
// absent.
func pageLimit(s string) (int, error) {
	if s == "" {
		return DefaultPageLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > routes.MaxPageLimit {
		return 0, fmt.Errorf("limit %q: want a number of routes from 1 to %d", s, routes.MaxPageLimit)
	}
	return n, nil
}

func (a *AdminServer) addRoute(w http.ResponseWriter, r *http.Request) {
	spec, ok := decodeSpec(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRequestTimeout)
	defer cancel()
	st, err := a.svc.AddRoute(ctx, spec)
	a.logMutation(r, "add route", spec.ID(), err).Str("spec", spec.String()).Send()
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, st)
}

func (a *AdminServer) deleteRoute(w http.ResponseWriter, r *http.Request) {
	spec, ok := decodeSpec(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRequestTimeout)
	defer cancel()
	err := a.svc.DeleteRoute(ctx, spec)
	a.logMutation(r, "delete route", spec.ID(), err).Str("spec", spec.String()).Send()
	writeDeleted(w, 1, err)
}

func (a *AdminServer) deleteRouteID(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), adminRequestTimeout)
	defer cancel()
	err := a.svc.DeleteRouteID(ctx, id)
	a.logMutation(r, "delete route", id, err).Send()
	writeDeleted(w, 1, err)
}

func (a *AdminServer) flushRoutes(w http.ResponseWriter, r *http.Request) {
	dest := r.URL.Query().Get("dest")
	ctx, cancel := context.WithTimeout(r.Context(), adminRequestTimeout)
	defer cancel()
	n, err := a.svc.FlushRoutes(ctx, dest)
	a.logMutation(r, "flush routes", "", err).Str("dest", amqp.Redact(dest)).Int("deleted", n).Send()
	writeDeleted(w, n, err)
}

func (a *AdminServer) listLinks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, nonNil(a.svc.Links()))
}

func (a *AdminServer) addLink(w http.ResponseWriter, r *http.Request) {
	a.changeLink(w, r, "add link", http.StatusCreated, a.svc.AddLink)
}

func (a *AdminServer) deleteLink(w http.ResponseWriter, r *http.Request) {
	a.changeLink(w, r, "delete link", http.StatusOK, a.svc.DeleteLink)
}

// changeLink reads a link (at most MaxAdminBody bytes, one JSON object,
// no unknown fields) and applies change to it.
func (a *AdminServer) changeLink(w http.ResponseWriter, r *http.Request, what string, ok int, change func(context.Context, api.Link) error) {
	var l api.Link
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		status, msg := bodyError(err)
		writeError(w, status, msg)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adminRequestTimeout)
	defer cancel()
	err := change(ctx, l)
	a.logMutation(r, what, "", err).Str("dest", amqp.Redact(l.Dest)).Str("src", amqp.Redact(l.Src)).Send()
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, ok, l)
}

// topology serves the link-state view as JSON, or as Graphviz with
// ?format=dot.
func (a *AdminServer) topology(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), adminRequestTimeout)
	defer cancel()
	snap, err := a.svc.Topology(ctx)
	if err != nil {
		writeServiceError(w, err)
		return
	}
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
		writeJSON(w, http.StatusOK, snap)
	case "dot":
		w.Header().Set("Content-Type", "text/vnd.graphviz; charset=utf-8")
		_, _ = io.WriteString(w, snap.DOT()) // the status is sent: a write error means the client left
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("format %q: want json or dot", f))
	}
}

func (a *AdminServer) listBrokers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, BrokerStatuses(a.svc.Brokers(), time.Now()))
}

func (a *AdminServer) routerInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.RouterInfo{
		RouterID: a.svc.RouterID(),
		Routes:   len(a.svc.Routes()),
		Links:    len(a.svc.Links()),
		Brokers:  len(a.svc.Brokers()),
	})
}

// healthz says the process is alive and serving HTTP; nothing more, so a
// broker outage does not get the router restarted by its supervisor.
func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, "ok\n") // a write error means the prober left
}

// readyz is 200 only while every broker connection is Operational.
func (a *AdminServer) readyz(w http.ResponseWriter, r *http.Request) {
	var down []api.BrokerStatus
	var names []string
	for _, st := range a.svc.Brokers() {
		if st.State != amqp.Operational {
			down = append(down, brokerStatus(st, time.Now()))
			names = append(names, fmt.Sprintf("%s (%s)", st.Broker, st.State))
		}
	}
	if len(down) == 0 {
		healthz(w, r)
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, api.NotReady{
		Error:   fmt.Sprintf("not ready: %d broker(s) not Operational: %s", len(down), strings.Join(names, ", ")),
		Brokers: down,
	})
}

// logMutation starts the info line every mutating request gets.
func (a *AdminServer) logMutation(r *http.Request, what, id string, err error) *zerolog.Event {
	ev := a.log.Info()
	if err != nil {
		ev = a.log.Warn().Str("error", err.Error())
	}
	if id != "" {
		ev = ev.Str("route", id)
	}
	return ev.Str("remote", r.RemoteAddr).Str("method", r.Method).Str("path", r.URL.Path).Str("op", what)
}

// decodeSpec reads a route spec from the body: at most MaxAdminBody bytes,
// one JSON object, no unknown fields. On failure it has written the error.
func decodeSpec(w http.ResponseWriter, r *http.Request) (routes.Spec, bool) {
	var spec routes.Spec
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxAdminBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&spec)
	if err == nil {
		if _, next := dec.Token(); next != io.EOF {
			err = errors.New("data after the route spec: send one JSON object")
			var tooBig *http.MaxBytesError
			if errors.As(next, &tooBig) {
				err = next
			}
		}
	}
	if err == nil && (spec.DestQueue != "" || spec.MaxMoves != 0) {
		err = errors.New("dest_queue and max_moves: set only by global destinations' flows (destinations: in the configuration), not through the API")
	}
	if err != nil {
		status, msg := bodyError(err)
		writeError(w, status, msg)
		return spec, false
	}
	return spec, true
}

// bodyError turns a decoding error into a status and a message naming
// what is wrong with the body.
func bodyError(err error) (int, string) {
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooBig.Limit)
	case errors.Is(err, io.EOF):
		return http.StatusBadRequest, "request body is empty: want a JSON route spec"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return http.StatusBadRequest, "request body: truncated JSON"
	case errors.As(err, &syntax):
		return http.StatusBadRequest, fmt.Sprintf("request body: invalid JSON at byte %d: %v", syntax.Offset, err)
	case errors.As(err, &typ):
		return http.StatusBadRequest, fmt.Sprintf("request body: field %q: got JSON %s, want %s", typ.Field, typ.Value, typ.Type)
	}
	// encoding/json reports unknown fields only as text:
	// `json: unknown field "x"`.
	return http.StatusBadRequest, "request body: " + strings.TrimPrefix(err.Error(), "json: ")
}

func writeDeleted(w http.ResponseWriter, n int, err error) {
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.Deleted{Deleted: n})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the status is sent: a write error means the client left
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// brokerStatus is amqp.Status as JSON at now: the state and the error as
// text (an error value would marshal as {}), the time of the next attempt
// and the time left until it.
func brokerStatus(st amqp.Status, now time.Time) api.BrokerStatus {
	b := api.BrokerStatus{
		Broker:      st.Broker,
		State:       st.State.String(),
		Since:       st.Since,
		URL:         st.URL,
		LastErrorAt: st.LastErrorAt,
		Attempt:     st.Attempt,
		Generation:  st.Generation,
	}
	if st.LastError != nil {
		b.LastError = st.LastError.Error()
	}
	b.RetryAt = st.RetryAt
	if b.RetryAt.IsZero() && st.RetryIn > 0 {
		// A status that knows the delay only: the attempt is that far off.
		b.RetryAt = now.Add(st.RetryIn)
	}
	if !b.RetryAt.IsZero() {
		b.RetryIn = b.RetryLeft(now).String()
	}
	return b
}

// BrokerStatuses is the broker connections as GET /api/v1/brokers gives
// them at now (the daemon's --status-every table prints the same).
func BrokerStatuses(sts []amqp.Status, now time.Time) []api.BrokerStatus {
	out := make([]api.BrokerStatus, 0, len(sts))
	for _, st := range sts {
		out = append(out, brokerStatus(st, now))
	}
	return out
}
