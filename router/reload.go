package router

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
)

// The reload's driver (docs/configuration.md, "Reload"): it reads the
// configuration file again, reduces both configurations to reloadInputs
// (reading password, token and TLS files), asks planReload, and carries
// the plan out through the route control and the brokers' connections.

// Live is what a reload changes outside the router, in main: the admin
// API's token and the log level.
type Live interface {
	// SetAdminToken makes token the admin API's from the next request on.
	SetAdminToken(token string) error
	// SetLogLevel sets the process's log level (debug, info, warn, error).
	SetLogLevel(level string) error
}

// The reload's errors: ReloadError wraps one of these.
var (
	ErrReloadInvalid = errors.New("router: reload: the configuration file is invalid; the running configuration goes on unchanged")
	ErrReloadRefused = errors.New("router: reload: the configuration file changes what cannot change while the router runs; nothing changed")
	ErrReloadBusy    = errors.New("router: reload: another reload is in progress; nothing changed: try again when it has answered")
)

// ReloadError is a refused reload: its kind (one of the ErrReload
// sentinels) and each problem as "file:line: what".
type ReloadError struct {
	Kind     error
	Problems []string
}

func (e *ReloadError) Error() string {
	if len(e.Problems) == 0 {
		return e.Kind.Error()
	}
	return e.Kind.Error() + ":\n  " + strings.Join(e.Problems, "\n  ")
}

func (e *ReloadError) Unwrap() error { return e.Kind }

// reloader is the router's reload state. slot lets one reload run at a
// time (a second is refused at once, never queued behind the first's
// I/O); in and cfg are owned by whoever holds slot, and by Start before
// any reload can run.
type reloader struct {
	slot chan struct{}
	live Live           // set by EnableReload before Start; nil: token and level are not reloaded
	cfg  *config.Config // the configuration in force
	in   reloadInput    // cfg as the last reload (or Start) read it
}

func newReloader() reloader { return reloader{slot: make(chan struct{}, 1)} }

// EnableReload gives the router what a reload changes outside it (main's
// admin API and log level). Call it once, before Start.
func (r *Router) EnableReload(live Live) { r.reload.live = live }

// startReload records the configuration in force at Start: the files it
// names are read now, as the connections read them when they dialled.
func (r *Router) startReload() {
	r.reload.cfg = r.cfg
	in, err := r.reloadInput(r.cfg)
	if err != nil {
		r.log.Warn().Err(err).Msg("reload: could not read the starting configuration's files; a reload will re-dial the brokers it cannot compare")
	}
	r.reload.in = in
}

// Reload reads the configuration file again and applies it: the
// configured routes added, removed or changed (unchanged ones untouched),
// brokers re-dialled where their connection settings changed, the admin
// token and the log level taken on. An invalid file, or one changing what
// cannot change live, is refused whole (*ReloadError) and the running
// configuration goes on. A second reload while one runs is refused.
func (r *Router) Reload(ctx context.Context) (api.Reload, error) {
	select {
	case r.reload.slot <- struct{}{}:
		defer func() { <-r.reload.slot }()
	default:
		return api.Reload{}, &ReloadError{Kind: ErrReloadBusy}
	}
	path := r.reload.cfg.Path()
	next, err := config.Load(path)
	if err != nil {
		problems := []string{err.Error()}
		var ce *config.Error
		if errors.As(err, &ce) {
			problems = ce.Problems
		}
		r.log.Warn().Str("file", path).Strs("problems", problems).Msg("reload refused: the running configuration goes on unchanged")
		return api.Reload{}, &ReloadError{Kind: ErrReloadInvalid, Problems: problems}
	}
	in, err := r.reloadInput(next)
	if err != nil {
		in.problems = append(in.problems, err.Error())
	}
	plan := planReload(r.reload.in, in, r.routeOrigins(), r.cluster != nil)
	if len(plan.refused) > 0 {
		r.log.Warn().Str("file", path).Strs("problems", plan.refused).Msg("reload refused: the running configuration goes on unchanged")
		return api.Reload{}, &ReloadError{Kind: ErrReloadRefused, Problems: plan.refused}
	}
	res, err := r.applyReload(ctx, plan, in, next)
	res.File = path
	r.logReload(res, err)
	return res, err
}

// applyReload carries plan out. in and next become the configuration in
// force even when a step failed (the error says which): what was applied
// stays applied, and the next reload compares with it.
func (r *Router) applyReload(ctx context.Context, plan reloadPlan, in reloadInput, next *config.Config) (api.Reload, error) {
	res := api.Reload{Changed: plan.changed(), RoutesUnchanged: plan.unchanged, RoutesAdded: reloadRoutes(plan.add),
		RoutesRemoved: reloadRoutes(plan.remove), RoutesChanged: reloadRoutes(plan.replace), BrokersRedialed: nonNilStrings(plan.redial), Settings: []string{}}
	var errs []error
	if err := r.routeCtl.reloadConfigured(ctx, plan.remove, plan.replace, plan.add); err != nil {
		errs = append(errs, err)
	}
	for _, name := range plan.redial {
		r.mu.Lock()
		pool := append([]*amqp.Conn(nil), r.pools[name]...)
		r.mu.Unlock()
		for _, c := range pool { // Reconfigure does no I/O: it signals the connection's goroutine
			if err := c.Reconfigure(in.brokers[name].cfg); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if live := r.reload.live; live != nil {
		if plan.token {
			if err := r.takeToken(live, next); err != nil {
				errs = append(errs, err)
			} else {
				res.Settings = append(res.Settings, "admin token")
			}
		}
		if plan.level != "" {
			if err := live.SetLogLevel(plan.level); err != nil {
				errs = append(errs, err)
			} else {
				res.Settings = append(res.Settings, fmt.Sprintf("log level %s -> %s", plan.oldLevel, plan.level))
			}
		}
	}
	r.reload.cfg, r.reload.in = next, in
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("router: reload: applied in part: %w", err)
	}
	return res, nil
}

func (r *Router) takeToken(live Live, next *config.Config) error {
	token, _, _, err := AdminToken(next)
	if err != nil {
		return err
	}
	return live.SetAdminToken(token)
}

// logReload writes the reload's one summary line.
func (r *Router) logReload(res api.Reload, err error) {
	ev, msg := r.log.Info(), "configuration reloaded"
	if err != nil {
		ev, msg = r.log.Error().Err(err), "configuration reloaded in part"
	}
	ev.Str("file", res.File).Int("routes_added", len(res.RoutesAdded)).Int("routes_removed", len(res.RoutesRemoved)).
		Int("routes_changed", len(res.RoutesChanged)).Int("routes_unchanged", res.RoutesUnchanged).
		Strs("brokers_redialed", res.BrokersRedialed).Strs("settings", res.Settings).Msg(msg)
}

// reloadInput reduces cfg to what planReload compares, reading the files
// it names (passwords, TLS files, the admin token). Routes the manager
// cannot normalize are problems in the input; an error is a file that
// could not be read.
func (r *Router) reloadInput(cfg *config.Config) (reloadInput, error) {
	in := reloadInput{brokers: map[string]brokerSums{}, fixed: cfg.FixedSettings(), level: cfg.Log.Level}
	for i, rs := range cfg.RouteSpecs() {
		spec, err := r.routes.Normalize(rs)
		if err != nil {
			in.problems = append(in.problems, fmt.Sprintf("%s: route %s: %v", cfg.RouteAt(i), rs, err))
			continue
		}
		in.routes = append(in.routes, configRoute{id: spec.ID(), spec: spec, at: cfg.RouteAt(i)})
	}
	bcs, err := cfg.BrokerConfigs()
	if err != nil {
		return in, err
	}
	var errs []error
	for _, bc := range bcs {
		dial, err := bc.DialFingerprint()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", cfg.BrokerAt(bc.Name), err))
		}
		in.brokers[bc.Name] = brokerSums{dial: dial, mgmt: bc.ManagementFingerprint(), at: cfg.BrokerAt(bc.Name), cfg: bc}
	}
	if r.reload.live != nil && !cfg.AdminOff() {
		token, _, _, err := AdminToken(cfg)
		if err != nil {
			errs = append(errs, err)
		}
		sum := sha256.Sum256([]byte(token))
		in.tokenSum = hex.EncodeToString(sum[:])
	}
	return in, errors.Join(errs...)
}

// routeOrigins is every route the manager runs, by id, with its origin.
func (r *Router) routeOrigins() map[string]routes.Origin { return r.routes.Origins() }

func reloadRoutes(rs []configRoute) []api.ReloadRoute {
	out := make([]api.ReloadRoute, 0, len(rs))
	for _, r := range rs {
		out = append(out, api.ReloadRoute{ID: r.id, Route: r.spec.String()})
	}
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// SetAdminToken makes token the one the API lets in from the next
// request on; the old one is refused from then. A token
// config.CheckAdminToken refuses changes nothing.
func (a *AdminServer) SetAdminToken(token string) error {
	if err := config.CheckAdminToken(token); err != nil {
		return fmt.Errorf("admin API: token: %w", err)
	}
	a.guard.setToken(token)
	return nil
}

// reloadConfig serves POST /api/v1/reload: the reload's answer, or its
// refusal with each problem.
func (a *AdminServer) reloadConfig(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), adminRequestTimeout)
	defer cancel()
	res, err := a.svc.Reload(ctx)
	a.logMutation(r, "reload", "", err).Send()
	if err != nil {
		writeServiceError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
