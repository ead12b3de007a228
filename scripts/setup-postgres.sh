#!/usr/bin/env bash
# PostgreSQL for the tests, on a bare Debian machine (run as root): installs Debian's postgresql if
# missing, lets the tests' connections from 127.0.0.1 and ::1 in without a password (this machine
# only: the server listens on loopback), starts the cluster, and creates the role `root` and the
# database `test` that the tests use (postgres://root@127.0.0.1:5432/test, test/helpers/env.ts).
# Safe to run again: each step is skipped when done.
set -euo pipefail

say() { echo "setup-postgres: $*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root (it installs packages and edits pg_hba.conf)"

if ! command -v pg_ctlcluster >/dev/null; then
  say "installing Debian's postgresql"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
    || die "could not install PostgreSQL"
fi

version=$(ls /etc/postgresql | sort -V | tail -n 1)
[ -n "$version" ] || die "no PostgreSQL cluster under /etc/postgresql"
if ! pg_lsclusters -h | awk '{print $1, $2}' | grep -qx "$version main"; then
  pg_createcluster "$version" main >/dev/null || die "could not create the cluster"
fi
hba="/etc/postgresql/$version/main/pg_hba.conf"
marker='# letta-temporal tests: loopback without a password'
if ! grep -qF "$marker" "$hba"; then
  say "letting loopback connections in without a password ($hba)"
  # First match wins in pg_hba.conf: these lines go before the Debian defaults.
  { echo "$marker"
    echo "host all all 127.0.0.1/32 trust"
    echo "host all all ::1/128 trust"
    cat "$hba"; } > "$hba.new" && mv "$hba.new" "$hba"
  chown postgres:postgres "$hba"
fi

if pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$version" main reload
else
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || die "could not start PostgreSQL"
fi
for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
pg_isready -q -h 127.0.0.1 -p 5432 || die "PostgreSQL is not reachable on 127.0.0.1:5432"

psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'root'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -d postgres -qc 'CREATE ROLE root SUPERUSER LOGIN' \
  || die "could not create the role root"
psql -h 127.0.0.1 -U root -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
  || createdb -h 127.0.0.1 -U root test || die "could not create the database test"
say "ready: postgres://root@127.0.0.1:5432/test"
