// Package storetest gives tests the run's PostgreSQL: make test starts one
// with testdata/postgres.sh and exports DATABASE_URL. Tests skip without
// it, but fail under CI, where it must be there.
package storetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URL is the run's database URL.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("DATABASE_URL is not set under CI: make test starts PostgreSQL (testdata/postgres.sh)")
		}
		t.Skip("no DATABASE_URL (run make test, or: export DATABASE_URL=$(bash testdata/postgres.sh start))")
	}
	return u
}

// Schema gives the test a schema of its own (dropped at its end) and
// returns the URL that uses it.
func Schema(t testing.TB) string {
	t.Helper()
	u := URL(t)
	name := fmt.Sprintf("t_%s_%d", strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())), time.Now().UnixNano()%1e6)
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	exec(t, u, "CREATE SCHEMA "+name)
	t.Cleanup(func() { exec(t, u, "DROP SCHEMA "+name+" CASCADE") })
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + name
}

// exec runs one statement on its own connection.
func exec(t testing.TB, url, sql string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close(ctx) }()
	if _, err := c.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
