#!/usr/bin/env bash
# make vulncheck: govulncheck, pinned, over the whole module, against the
# Go vulnerability database taken as a Go module through the module proxy
# (no other network needed, as in CI): golang.org/x/vulndb ships the OSV
# records (data/osv); its own cmd/indexdb builds from them the database
# govulncheck reads with -db file://. Built once per database version in
# .cache/. Fails (exit 3) when a vulnerability is reachable from our code;
# imported-but-not-called ones are listed, not fatal.
# Bump VULNDB_VERSION (go list -m -versions golang.org/x/vulndb gives
# none: it has no tags; take a pseudo-version from the proxy's @latest) to
# check against newer records.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
GOVULNCHECK=${GOVULNCHECK:-golang.org/x/vuln/cmd/govulncheck@v1.9.0}
VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}
DB=$PWD/.cache/vulndb-$VULNDB_VERSION
if [ ! -f "$DB/index/db.json" ]; then
  echo "vulncheck: building the vulnerability database golang.org/x/vulndb@$VULNDB_VERSION into $DB (once)"
  src=$($GO mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src/data/osv" ] || { echo "vulncheck: no data/osv in golang.org/x/vulndb@$VULNDB_VERSION ($src)" >&2; exit 1; }
  rm -rf "$DB.tmp"
  # Outside the module: indexdb builds with vulndb's own go.mod.
  (cd / && GOFLAGS=-mod=mod $GO run "golang.org/x/vulndb/cmd/indexdb@$VULNDB_VERSION" -vulns "$src/data/osv" -out "$DB.tmp")
  mv "$DB.tmp" "$DB"
fi
echo "vulncheck: $($GO version), database golang.org/x/vulndb@$VULNDB_VERSION ($(ls "$DB/ID" | wc -l) records)"
exec $GO run "$GOVULNCHECK" -db "file://$DB" ./...
