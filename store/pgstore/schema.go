package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fedrouter/fedrouter/store"
)

// migrations[i] takes the schema from version i to i+1. Append only: a
// released step is never edited, since stores already ran it.
var migrations = []string{
	// 1: members, route definitions, leases. Every row carries its
	// cluster's name, so that clusters can share a database.
	`CREATE TABLE fedrouter_members (
		cluster     text NOT NULL,
		id          text NOT NULL,
		incarnation text NOT NULL,
		admin_url   text NOT NULL DEFAULT '',
		brokers     text[] NOT NULL DEFAULT '{}',
		local       text[] NOT NULL DEFAULT '{}',
		beat        timestamptz NOT NULL,
		left_at     timestamptz,
		PRIMARY KEY (cluster, id)
	);
	CREATE TABLE fedrouter_routes (
		cluster text NOT NULL,
		id      text NOT NULL,
		spec    jsonb NOT NULL,
		origin  text NOT NULL,
		created timestamptz NOT NULL DEFAULT now(),
		PRIMARY KEY (cluster, id)
	);
	CREATE TABLE fedrouter_leases (
		cluster text NOT NULL,
		route   text NOT NULL,
		owner   text NOT NULL DEFAULT '',
		epoch   bigint NOT NULL DEFAULT 0,
		until   timestamptz NOT NULL DEFAULT 'epoch',
		PRIMARY KEY (cluster, route),
		FOREIGN KEY (cluster, route) REFERENCES fedrouter_routes (cluster, id) ON DELETE CASCADE
	);
	CREATE INDEX fedrouter_leases_owner ON fedrouter_leases (cluster, owner);`,
	// 2: each member's routes' statuses, written with its beats
	// (store.Member.Routes).
	`ALTER TABLE fedrouter_members ADD COLUMN routes jsonb;`,
	// 3: when the statuses were published: a beat without them leaves
	// the last ones (store.Member.Routes nil).
	`ALTER TABLE fedrouter_members ADD COLUMN routes_at timestamptz;
	UPDATE fedrouter_members SET routes_at = beat WHERE routes IS NOT NULL;`,
}

// SchemaVersion is the version this fedrouter migrates stores to.
var SchemaVersion = len(migrations)

// migrationLock is the advisory lock that serialises members migrating
// the same database at once (an arbitrary constant: "fedr").
const migrationLock = 0x66656472

// migrate brings the schema to SchemaVersion in one transaction, or
// refuses a store a newer fedrouter migrated.
func migrate(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS fedrouter_schema (version int NOT NULL)`); err != nil {
		return err
	}
	var have int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM fedrouter_schema`).Scan(&have); err != nil {
		return err
	}
	if have > SchemaVersion {
		return fmt.Errorf("%w: the store is at schema version %d, this fedrouter knows versions up to %d: upgrade this router (or point it at another database)", store.ErrSchemaNewer, have, SchemaVersion)
	}
	for v := have; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrating the schema to version %d: %w", v+1, err)
		}
	}
	if have < SchemaVersion {
		if _, err := tx.Exec(ctx, `DELETE FROM fedrouter_schema`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO fedrouter_schema (version) VALUES ($1)`, SchemaVersion); err != nil {
			return err
		}
	}
	return nil
}
