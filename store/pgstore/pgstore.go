// Package pgstore is the cluster store on PostgreSQL (pgx v5). Every call
// is one statement (or one short transaction): the leases are taken,
// renewed and released by conditional UPDATEs that compare with the
// database's clock, so that the first member to take an expired lease wins
// and a member whose lease moved on cannot renew it.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fedrouter/fedrouter/store"
)

// Store is a cluster's state in PostgreSQL.
type Store struct {
	pool    *pgxpool.Pool
	cluster string
	secret  string // the URL's password, blanked out of every error
}

var _ store.Store = (*Store)(nil)

// Options tune Open; zero values take the defaults.
type Options struct {
	// MaxConns bounds the pool. Default 4: a member runs one call at a time
	// on its heartbeat, plus the admin API's.
	MaxConns int32
	// ConnectTimeout bounds dialling one connection. Default 5s.
	ConnectTimeout time.Duration
}

// Open connects to the database at url, checks the credentials and
// migrates the schema; cluster names the cluster whose rows it reads and
// writes. Its errors never hold the URL's password.
func Open(ctx context.Context, url, cluster string, o Options) (*Store, error) {
	if o.MaxConns <= 0 {
		o.MaxConns = 4
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	cfg, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = o.MaxConns
	cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	s := &Store{cluster: cluster, secret: cfg.ConnConfig.Password}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, s.wrap("connecting", err)
	}
	// pgx.BeginFunc rolls back on error before the pool is closed (Close
	// waits for every connection to come back).
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return migrate(ctx, tx) }); err != nil {
		s.pool.Close()
		return nil, s.wrap("opening the store", err)
	}
	return s, nil
}

// CheckURL says whether Open can use url, without connecting: the
// router's start refuses a URL that does not parse, and check-config
// with it.
func CheckURL(url string) error {
	_, err := parseURL(url)
	return err
}

func parseURL(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors may quote the URL: say what is wrong without it.
		return nil, fmt.Errorf("%w: the store URL is not a PostgreSQL URL or key=value string (postgres://user:password@host:port/database)", store.ErrConfig)
	}
	return cfg, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// wrap turns err into the store layer's error: ErrAuth, ErrSchemaNewer,
// ErrNotFound kept, anything else ErrUnavailable; the password blanked.
func (s *Store) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	kind := store.ErrUnavailable
	var pg *pgconn.PgError
	switch {
	case errors.Is(err, store.ErrSchemaNewer), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConfig):
		return fmt.Errorf("%s: %w", what, err) // ours: no password in them
	case errors.As(err, &pg) && (pg.Code == "28P01" || pg.Code == "28000"):
		kind = store.ErrAuth
	case errors.As(err, &pg) && pg.Code == "3D000":
		kind = store.ErrConfig // no such database
	}
	return &Error{Op: what, Kind: kind, msg: s.redact(err.Error())}
}

// redact blanks the password out of text (pgx's messages hold the user,
// host and database, but a password could come back in a server's words).
func (s *Store) redact(text string) string {
	if len(s.secret) >= 3 {
		text = strings.ReplaceAll(text, s.secret, "xxxxx")
	}
	return text
}

// Error is a store call's failure: Kind is one of store's sentinels.
type Error struct {
	Op   string
	Kind error
	msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%v: %s: %s", e.Kind, e.Op, e.msg) }
func (e *Error) Unwrap() error { return e.Kind }

// Temporary says whether retrying can help: not after a refused password
// or a bad database name.
func Temporary(err error) bool {
	var ne net.Error
	return errors.Is(err, store.ErrUnavailable) || errors.As(err, &ne)
}

func micros(d time.Duration) int64 { return d.Microseconds() }

// Beat upserts the member's row and renews its leases, in one statement.
// A lease that expired but is still the member's with the same epoch is
// renewed too: nobody took it (a takeover changes owner and epoch, and a
// claim re-checks the row after locking it), so the member has been its
// only holder all along — after a store outage, the leases settle back
// without moving a route.
func (s *Store) Beat(ctx context.Context, m store.Member, held []store.Lease, lease time.Duration) (store.Renewal, error) {
	routes, epochs := leaseArrays(held)
	if m.Brokers == nil {
		m.Brokers = []string{} // NULL is refused: the column is NOT NULL
	}
	if m.Local == nil {
		m.Local = []string{}
	}
	rows, err := s.pool.Query(ctx, `
WITH m AS (
	INSERT INTO fedrouter_members AS t (cluster, id, incarnation, admin_url, brokers, local, beat, left_at, routes, routes_at)
	VALUES ($1, $2, $3, $4, $5, $9, now(), NULL, $10::jsonb, CASE WHEN $10::jsonb IS NULL THEN NULL ELSE now() END)
	ON CONFLICT (cluster, id) DO UPDATE SET incarnation = excluded.incarnation,
		admin_url = excluded.admin_url, brokers = excluded.brokers, local = excluded.local, beat = now(), left_at = NULL,
		routes = coalesce(excluded.routes, t.routes), routes_at = coalesce(excluded.routes_at, t.routes_at)
	WHERE t.incarnation = excluded.incarnation OR t.left_at IS NOT NULL OR t.beat < now() - $6 * interval '1 microsecond'
	RETURNING beat
), r AS (
	UPDATE fedrouter_leases l SET until = now() + $6 * interval '1 microsecond'
	FROM unnest($7::text[], $8::bigint[]) AS h(route, epoch)
	WHERE l.cluster = $1 AND l.route = h.route AND l.owner = $2 AND l.epoch = h.epoch AND EXISTS (SELECT 1 FROM m)
	RETURNING l.route, l.epoch, l.until
)
SELECT m.beat, r.route, r.epoch, r.until FROM m LEFT JOIN r ON true`,
		s.cluster, m.ID, m.Incarnation, m.AdminURL, m.Brokers, micros(lease), routes, epochs, m.Local, jsonText(m.Routes))
	if err != nil {
		return store.Renewal{}, s.wrap("heartbeat", err)
	}
	var out store.Renewal
	for rows.Next() {
		var route *string
		var epoch *int64
		var until *time.Time
		if err := rows.Scan(&out.Now, &route, &epoch, &until); err != nil {
			rows.Close()
			return store.Renewal{}, s.wrap("heartbeat", err)
		}
		if route != nil {
			out.Held = append(out.Held, store.Lease{Route: *route, Epoch: *epoch, Until: *until})
		}
	}
	if err := rows.Err(); err != nil {
		return store.Renewal{}, s.wrap("heartbeat", err)
	}
	if out.Now.IsZero() { // the member's row was not ours to update
		return store.Renewal{}, s.superseded(ctx, m)
	}
	return out, nil
}

// superseded says which process holds member m's row.
func (s *Store) superseded(ctx context.Context, m store.Member) error {
	var inc string
	var secs float64
	err := s.pool.QueryRow(ctx, `SELECT incarnation, EXTRACT(EPOCH FROM now() - beat)::float8 FROM fedrouter_members WHERE cluster = $1 AND id = $2`, s.cluster, m.ID).Scan(&inc, &secs)
	if err != nil {
		return fmt.Errorf("%w: member %s: %w", store.ErrSuperseded, m.ID, s.wrap("heartbeat", err))
	}
	return fmt.Errorf("%w: member %s is incarnation %s (this process: %s), which beat %s ago; two routers have router_id %s",
		store.ErrSuperseded, m.ID, inc, m.Incarnation, time.Duration(secs*float64(time.Second)).Round(time.Millisecond), m.ID)
}

// jsonText is JSON for a jsonb parameter: nil as SQL NULL.
func jsonText(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func leaseArrays(ls []store.Lease) ([]string, []int64) {
	routes, epochs := make([]string, len(ls)), make([]int64, len(ls))
	for i, l := range ls {
		routes[i], epochs[i] = l.Route, l.Epoch
	}
	return routes, epochs
}

// Claim takes the free or expired leases among ids; rows another member is
// taking at this instant are skipped (SKIP LOCKED), never waited for, and
// re-checked after locking, so that exactly one claimant wins each.
func (s *Store) Claim(ctx context.Context, member string, ids []string, lease time.Duration) ([]store.Lease, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
UPDATE fedrouter_leases l SET owner = $2, epoch = l.epoch + 1, until = now() + $3 * interval '1 microsecond'
FROM (SELECT route FROM fedrouter_leases
	WHERE cluster = $1 AND route = ANY($4::text[]) AND until < now()
	ORDER BY route FOR UPDATE SKIP LOCKED) f
WHERE l.cluster = $1 AND l.route = f.route AND l.until < now()
RETURNING l.route, l.epoch, l.until`, s.cluster, member, micros(lease), ids)
	if err != nil {
		return nil, s.wrap("claiming leases", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Lease, error) {
		var l store.Lease
		err := r.Scan(&l.Route, &l.Epoch, &l.Until)
		return l, err
	})
	return out, s.wrap("claiming leases", err)
}

// Release frees the leases member holds with the epochs given; the epoch
// stays, so the next claim is epoch + 1.
func (s *Store) Release(ctx context.Context, member string, leases []store.Lease) (int, error) {
	if len(leases) == 0 {
		return 0, nil
	}
	routes, epochs := leaseArrays(leases)
	tag, err := s.pool.Exec(ctx, `
UPDATE fedrouter_leases l SET owner = '', until = 'epoch'
FROM unnest($3::text[], $4::bigint[]) AS h(route, epoch)
WHERE l.cluster = $1 AND l.route = h.route AND l.owner = $2 AND l.epoch = h.epoch`,
		s.cluster, member, routes, epochs)
	if err != nil {
		return 0, s.wrap("releasing leases", err)
	}
	return int(tag.RowsAffected()), nil
}

// Leave marks member as gone on purpose.
func (s *Store) Leave(ctx context.Context, member string) error {
	_, err := s.pool.Exec(ctx, `UPDATE fedrouter_members SET left_at = now() WHERE cluster = $1 AND id = $2`, s.cluster, member)
	return s.wrap("leaving", err)
}

// PutRoute adds a definition and its free lease, unless the id exists.
func (s *Store) PutRoute(ctx context.Context, r store.RouteDef) (bool, error) {
	var id string
	err := s.pool.QueryRow(ctx, `
WITH ins AS (
	INSERT INTO fedrouter_routes (cluster, id, spec, origin) VALUES ($1, $2, $3, $4)
	ON CONFLICT (cluster, id) DO NOTHING RETURNING id
)
INSERT INTO fedrouter_leases (cluster, route) SELECT $1, id FROM ins RETURNING route`,
		s.cluster, r.ID, string(r.Spec), r.Origin).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, s.wrap("adding route "+r.ID, err)
	}
	return true, nil
}

// DeleteRoute removes a definition; its lease goes with it (ON DELETE
// CASCADE), and its holder finds out at its next heartbeat.
func (s *Store) DeleteRoute(ctx context.Context, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM fedrouter_routes WHERE cluster = $1 AND id = $2`, s.cluster, id)
	if err != nil {
		return s.wrap("deleting route "+id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: route %s", store.ErrNotFound, id)
	}
	return nil
}

// DeleteRoutes removes the definitions ids with their leases, in one
// statement; their holders find out at their next heartbeat.
func (s *Store) DeleteRoutes(ctx context.Context, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM fedrouter_routes WHERE cluster = $1 AND id = ANY($2)`, s.cluster, ids)
	if err != nil {
		return 0, s.wrap(fmt.Sprintf("deleting %d routes", len(ids)), err)
	}
	return int(tag.RowsAffected()), nil
}

// Snapshot reads members and routes with their leases, in one
// repeatable-read transaction so that both are of one instant.
func (s *Store) Snapshot(ctx context.Context) (store.Snapshot, error) {
	var snap store.Snapshot
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&snap.Now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT id, incarnation, admin_url, brokers, local, beat, left_at IS NOT NULL AND left_at >= beat
			FROM fedrouter_members WHERE cluster = $1 ORDER BY id`, s.cluster)
		if err != nil {
			return err
		}
		if snap.Members, err = pgx.CollectRows(rows, scanMember); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT r.id, r.spec::text, r.origin, l.owner, l.epoch, l.until
			FROM fedrouter_routes r JOIN fedrouter_leases l ON l.cluster = r.cluster AND l.route = r.id
			WHERE r.cluster = $1 ORDER BY r.id`, s.cluster)
		if err != nil {
			return err
		}
		snap.Routes, err = pgx.CollectRows(rows, scanRoute)
		return err
	})
	if err != nil {
		return store.Snapshot{}, s.wrap("reading the cluster's state", err)
	}
	return snap, nil
}

func scanMember(r pgx.CollectableRow) (store.MemberRow, error) {
	var m store.MemberRow
	err := r.Scan(&m.ID, &m.Incarnation, &m.AdminURL, &m.Brokers, &m.Local, &m.LastBeat, &m.Left)
	return m, err
}

// Reports reads the members' published statuses, in one statement.
func (s *Store) Reports(ctx context.Context) ([]store.Report, time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, routes_at, routes::text, now() FROM fedrouter_members
		WHERE cluster = $1 AND routes IS NOT NULL ORDER BY id`, s.cluster)
	if err != nil {
		return nil, time.Time{}, s.wrap("reading the members' route statuses", err)
	}
	var now time.Time
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Report, error) {
		var rep store.Report
		var text string
		err := r.Scan(&rep.Member, &rep.At, &text, &now)
		rep.Routes = []byte(text)
		return rep, err
	})
	if err != nil {
		return nil, time.Time{}, s.wrap("reading the members' route statuses", err)
	}
	return out, now, nil
}

func scanRoute(r pgx.CollectableRow) (store.RouteRow, error) {
	var rr store.RouteRow
	var spec string
	err := r.Scan(&rr.ID, &spec, &rr.Origin, &rr.Owner, &rr.Epoch, &rr.Until)
	rr.Spec = []byte(spec)
	return rr, err
}
