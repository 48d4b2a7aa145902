#!/usr/bin/env bash
# setup-services.sh — make sure the services Faultline needs are reachable.
#
# Used by `make run` and `make test`, on a developer machine (fresh Debian 12,
# root or a user with sudo) and in CI (CI=true), where Postgres and Redis are
# normally already running. Idempotent: running it again changes nothing and
# prints only the summary line.
#
# What it does, in order:
#   1. toolchain: installs build-essential + pkg-config if `cc` is missing;
#      exits 1 with a rustup hint if `cargo` is missing (not installed via apt:
#      Debian's rustc is too old for this workspace).
#   2. Postgres (DATABASE_URL): uses it if it answers; otherwise, for a local
#      host only, installs postgresql via apt and starts the Debian cluster that
#      listens on the URL's port.
#   3. Role: if the URL's user cannot log in over TCP, the *local* cluster is
#      configured minimally for development:
#        - the role is created (LOGIN SUPERUSER, with the URL's password if any),
#          or, if it exists and the URL has a password, that password is set;
#        - only if the URL has no password and login still fails, two `trust`
#          lines for that one user from 127.0.0.1/32 and ::1/128 are prepended
#          to pg_hba.conf (marked "faultline setup-services") and the config is
#          reloaded.
#      Nothing is changed when the connection already works, and a remote
#      server is never modified.
#   4. Database: creates the database named in DATABASE_URL if it is missing.
#   5. Redis (REDIS_URL, skipped with SKIP_REDIS=1): uses it if it answers PING;
#      otherwise, for a local host only, installs redis-server and starts a
#      throw-away instance (no persistence) on the URL's port.
#   6. With NEED_BROWSER=1: Debian's chromium and chromium-driver, when
#      missing (a warning, not an error, if they cannot be installed).
#
# Environment:
#   DATABASE_URL   default postgres://postgres@127.0.0.1:5432/faultline
#   REDIS_URL      default redis://127.0.0.1:6379
#   SKIP_REDIS=1   do not check or start Redis
#   NEED_BROWSER=1 also install Debian's chromium + chromium-driver when missing
#                  (the review console's browser tests; set by `make test`)
#   SETUP_WAIT_SECS  how long to wait for a service to come up (default 30)
#   CI=true        wait for already-configured services before installing
#
# Passwords in URLs must be percent-encoded (as for sqlx/libpq); they are never
# printed.

set -euo pipefail

DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/faultline}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
SKIP_REDIS="${SKIP_REDIS:-0}"
WAIT_SECS="${SETUP_WAIT_SECS:-30}"
IN_CI=0
case "${CI:-}" in true | 1 | yes) IN_CI=1 ;; esac

WORKDIR="$(mktemp -d "${TMPDIR:-/tmp}/faultline-setup.XXXXXX")"
trap 'rm -rf "$WORKDIR"' EXIT

# ---------------------------------------------------------------- helpers --

say() { printf 'setup: %s\n' "$*" >&2; }
die() {
    printf 'setup: error: %s\n' "$*" >&2
    exit 1
}

have() { command -v "$1" >/dev/null 2>&1; }

# Run a command as root (directly, or through sudo).
as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif have sudo; then
        sudo "$@"
    else
        die "need root for: $* (run as root or install sudo)"
    fi
}

can_be_postgres() {
    id postgres >/dev/null 2>&1 || return 1
    [[ $EUID -eq 0 ]] || have sudo
}

# Run a command as the local `postgres` OS user (peer auth over the socket).
as_postgres() {
    if [[ $EUID -eq 0 ]]; then
        (cd / && runuser -u postgres -- "$@")
    else
        (cd / && sudo -u postgres -- "$@")
    fi
}

APT_UPDATED=0
apt_install() {
    have apt-get || die "cannot install $* automatically (no apt-get); please install: $*"
    local log="$WORKDIR/apt.log"
    say "installing $* (apt-get)..."
    if [[ $APT_UPDATED -eq 0 ]]; then
        if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >"$log" 2>&1; then
            tail -n 20 "$log" >&2
            die "apt-get update failed"
        fi
        APT_UPDATED=1
    fi
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "apt-get install $* failed"
    fi
}

# wait_until SECONDS CMD...: poll CMD every 0.5 s until it succeeds or the
# deadline passes.
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

# shellcheck disable=SC2016 # $1/$2 expand in the child bash, on purpose.
tcp_open() { timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null; }

is_local_host() {
    case "$1" in '' | localhost | 127.* | ::1 | 0.0.0.0) return 0 ;; *) return 1 ;; esac
}

urldecode() {
    local s="${1//\\/\\\\}"
    printf '%b' "${s//%/\\x}"
}

# parse_url URL: sets U_SCHEME U_USERINFO U_USER U_PASS U_HAS_PASS U_HOSTPORT
# U_HOST U_PORT U_PATH U_QUERY. Handles scheme://[user[:pass]@]host[:port][/path][?query],
# including [v6] hosts. User, password and path are percent-decoded.
parse_url() {
    local url="$1" rest authority
    [[ $url == *://* ]] || die "not a URL: $(mask_url "$url")"
    U_SCHEME="${url%%://*}"
    rest="${url#*://}"
    rest="${rest%%#*}"
    U_QUERY=""
    if [[ $rest == *\?* ]]; then
        U_QUERY="${rest#*\?}"
        rest="${rest%%\?*}"
    fi
    authority="${rest%%/*}"
    U_PATH=""
    [[ $rest == */* ]] && U_PATH="$(urldecode "${rest#*/}")"
    U_USERINFO=""
    if [[ $authority == *@* ]]; then
        U_USERINFO="${authority%@*}"
        authority="${authority##*@}"
    fi
    U_HOSTPORT="$authority"
    U_USER="$(urldecode "${U_USERINFO%%:*}")"
    U_PASS=""
    U_HAS_PASS=0
    if [[ $U_USERINFO == *:* ]]; then
        U_PASS="$(urldecode "${U_USERINFO#*:}")"
        U_HAS_PASS=1
    fi
    U_PORT=""
    if [[ $authority == \[* ]]; then
        U_HOST="${authority%%]*}"
        U_HOST="${U_HOST#[}"
        authority="${authority#*]}"
        [[ $authority == :* ]] && U_PORT="${authority#:}"
    else
        U_HOST="${authority%%:*}"
        [[ $authority == *:* ]] && U_PORT="${authority##*:}"
    fi
    if [[ -n $U_PORT && ! $U_PORT =~ ^[0-9]+$ ]]; then
        die "bad port '$U_PORT' in $(mask_url "$url")"
    fi
    return 0
}

# Replace the password in a URL with ***.
mask_url() {
    local url="$1" scheme rest authority tail=""
    [[ $url == *://* ]] || {
        printf '%s' "$url"
        return
    }
    scheme="${url%%://*}"
    rest="${url#*://}"
    authority="${rest%%[/?#]*}"
    tail="${rest:${#authority}}"
    if [[ $authority == *@* ]]; then
        local userinfo="${authority%@*}"
        [[ $userinfo == *:* ]] && authority="${userinfo%%:*}:***@${authority##*@}"
    fi
    printf '%s://%s%s' "$scheme" "$authority" "$tail"
}

# --------------------------------------------------------------- toolchain --

check_toolchain() {
    if ! have cc; then
        apt_install build-essential pkg-config
    fi
    if ! have cargo; then
        if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
            die "cargo is installed in ~/.cargo/bin but not on PATH; run: . \"\$HOME/.cargo/env\""
        fi
        die "cargo not found. Install the Rust toolchain with rustup (https://rustup.rs):
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y
    . \"\$HOME/.cargo/env\"
(Debian's packaged rustc is too old for this workspace, which needs Rust >= 1.88.)"
    fi
}

# ---------------------------------------------------------------- postgres --

pg_setup_vars() {
    parse_url "$DATABASE_URL"
    case "$U_SCHEME" in postgres | postgresql) ;; *) die "DATABASE_URL must start with postgres:// (got $U_SCHEME://)" ;; esac
    PG_HOST="$U_HOST"
    PG_PORT="${U_PORT:-5432}"
    PG_USER="${U_USER:-${USER:-$(id -un)}}"
    PG_PASS="$U_PASS"
    PG_HAS_PASS=$U_HAS_PASS
    PG_DB="$U_PATH"
    [[ -n $PG_DB ]] || die "DATABASE_URL must name a database, e.g. postgres://postgres@127.0.0.1:5432/faultline"
    [[ $PG_DB != */* ]] || die "bad database name '$PG_DB' in DATABASE_URL"
    local q=""
    [[ -n $U_QUERY ]] && q="?$U_QUERY"
    local ui=""
    [[ -n $U_USERINFO ]] && ui="$U_USERINFO@"
    ADMIN_URL="$U_SCHEME://$ui$U_HOSTPORT/postgres$q"
    PG_MASKED="$(mask_url "$DATABASE_URL")"
}

pg_answers() {
    if have pg_isready; then
        local args=(-q -t 3 -p "$PG_PORT")
        [[ -n $PG_HOST ]] && args+=(-h "$PG_HOST")
        pg_isready "${args[@]}"
    else
        tcp_open "${PG_HOST:-127.0.0.1}" "$PG_PORT"
    fi
}

pg_installed() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }

# Print "VERSION CLUSTER" of the Debian cluster configured for $PG_PORT.
pg_find_cluster() {
    have pg_lsclusters || return 1
    pg_lsclusters -h 2>/dev/null | awk -v p="$PG_PORT" '$3 == p { print $1, $2; exit }'
}

pg_start_local() {
    is_local_host "$PG_HOST" ||
        die "Postgres at ${PG_HOST}:${PG_PORT} (from DATABASE_URL) does not answer, and it is not local; start it or fix DATABASE_URL"

    if ! pg_installed; then
        apt_install postgresql postgresql-client
        # The package may have started its cluster on its own.
        pg_answers && return 0
    fi

    local cluster ver name
    cluster="$(pg_find_cluster || true)"
    if [[ -z $cluster ]]; then
        if have pg_lsclusters && [[ -n "$(pg_lsclusters -h 2>/dev/null)" ]]; then
            die "no local Postgres cluster is configured for port $PG_PORT (see pg_lsclusters); fix DATABASE_URL's port"
        fi
        ver="$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)"
        [[ -n $ver ]] || die "postgresql is installed but no server version found under /usr/lib/postgresql"
        say "creating Postgres cluster $ver/main on port $PG_PORT..."
        as_root pg_createcluster -p "$PG_PORT" "$ver" main >/dev/null
        cluster="$ver main"
    fi
    read -r ver name <<<"$cluster"
    [[ -d /etc/postgresql/$ver/$name ]] || die "cluster config /etc/postgresql/$ver/$name not found"

    say "starting Postgres $ver/$name on port $PG_PORT..."
    if ! as_root pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start >"$WORKDIR/pgstart.log" 2>&1; then
        # "already running" is fine; anything else: fall back to the service.
        if ! pg_answers; then
            as_root service postgresql start >>"$WORKDIR/pgstart.log" 2>&1 || {
                cat "$WORKDIR/pgstart.log" >&2
                die "could not start Postgres $ver/$name"
            }
        fi
    fi
    wait_until "$WAIT_SECS" pg_answers ||
        die "Postgres did not accept connections on ${PG_HOST:-localhost}:$PG_PORT within ${WAIT_SECS}s (see /var/log/postgresql/)"
}

# psql as the URL's user against the `postgres` database.
pg_try_login() {
    PGCONNECT_TIMEOUT=5 psql "$ADMIN_URL" -X -q -tA -c 'select 1' >/dev/null 2>"$WORKDIR/login.err"
}

# psql as the postgres OS user over the local socket; SQL on stdin so that
# :'var' / :"var" interpolation quotes values safely.
pg_local_admin_psql() {
    as_postgres psql -X -q -tA -v ON_ERROR_STOP=1 -p "$PG_PORT" -d postgres "$@"
}

pg_fix_login() {
    local why
    why="$(head -n 3 "$WORKDIR/login.err")"
    is_local_host "$PG_HOST" ||
        die "cannot log in to $PG_MASKED: $why"
    can_be_postgres ||
        die "cannot log in to $PG_MASKED ($why), and cannot act as the postgres OS user to fix it"

    local exists
    exists="$(pg_local_admin_psql -v u="$PG_USER" <<<"select 1 from pg_roles where rolname = :'u';")" ||
        die "cannot connect to the local cluster as the postgres OS user; original error: $why"

    if [[ -z $exists ]]; then
        say "creating Postgres role '$PG_USER' (LOGIN SUPERUSER, local development)..."
        if [[ $PG_HAS_PASS -eq 1 ]]; then
            pg_local_admin_psql -v u="$PG_USER" -v p="$PG_PASS" <<<"create role :\"u\" with login superuser password :'p';" >/dev/null
        else
            pg_local_admin_psql -v u="$PG_USER" <<<"create role :\"u\" with login superuser;" >/dev/null
        fi
    elif [[ $PG_HAS_PASS -eq 1 ]]; then
        say "setting the password of Postgres role '$PG_USER' from DATABASE_URL (local development)..."
        pg_local_admin_psql -v u="$PG_USER" -v p="$PG_PASS" <<<"alter role :\"u\" with login password :'p';" >/dev/null
    fi
    pg_try_login && return 0

    if [[ $PG_HAS_PASS -eq 0 ]] && grep -qiE 'password|authentication' "$WORKDIR/login.err"; then
        pg_trust_local_user
        pg_try_login && return 0
    fi
    die "still cannot log in to $PG_MASKED: $(head -n 3 "$WORKDIR/login.err")"
}

# Prepend `trust` lines for this one user on loopback to pg_hba.conf.
pg_trust_local_user() {
    [[ $PG_USER =~ ^[A-Za-z0-9_.-]+$ ]] ||
        die "refusing to edit pg_hba.conf for unusual user name '$PG_USER'; set a password in DATABASE_URL instead"
    local hba marker="# faultline setup-services: local dev access for $PG_USER"
    hba="$(pg_local_admin_psql <<<"show hba_file;")"
    [[ -n $hba ]] || die "could not locate pg_hba.conf"
    if as_postgres grep -qxF "$marker" "$hba"; then
        return 0
    fi
    say "allowing '$PG_USER' from 127.0.0.1/::1 without password in $hba (local development; put a password in DATABASE_URL to avoid this)..."
    {
        printf '%s\n' "$marker"
        printf 'host\tall\t"%s"\t127.0.0.1/32\ttrust\n' "$PG_USER"
        printf 'host\tall\t"%s"\t::1/128\ttrust\n' "$PG_USER"
        as_postgres cat "$hba"
    } >"$WORKDIR/pg_hba.conf"
    as_postgres tee "$hba" <"$WORKDIR/pg_hba.conf" >/dev/null
    pg_local_admin_psql <<<"select pg_reload_conf();" >/dev/null
}

pg_ensure_db() {
    local found
    found="$(psql "$ADMIN_URL" -X -q -tA -v ON_ERROR_STOP=1 -v db="$PG_DB" \
        <<<"select 1 from pg_database where datname = :'db';" 2>"$WORKDIR/db.err")" ||
        die "cannot query databases on $(mask_url "$ADMIN_URL"): $(head -n 3 "$WORKDIR/db.err")"
    [[ -n $found ]] && return 0
    if ! psql "$ADMIN_URL" -X -q -v ON_ERROR_STOP=1 -v db="$PG_DB" \
        <<<"create database :\"db\";" >/dev/null 2>"$WORKDIR/db.err"; then
        # Lost a race with a concurrent run? Then it exists now.
        grep -q 'already exists' "$WORKDIR/db.err" ||
            die "could not create database '$PG_DB': $(head -n 3 "$WORKDIR/db.err")"
    fi
}

setup_postgres() {
    pg_setup_vars
    if ! pg_answers; then
        if [[ $IN_CI -eq 1 ]] && wait_until "$WAIT_SECS" pg_answers; then
            :
        else
            pg_start_local
        fi
    fi
    have psql || apt_install postgresql-client
    pg_try_login || pg_fix_login
    pg_ensure_db
}

# ------------------------------------------------------------------- redis --

redis_setup_vars() {
    parse_url "$REDIS_URL"
    case "$U_SCHEME" in redis | rediss) ;; *) die "REDIS_URL must start with redis:// (got $U_SCHEME://)" ;; esac
    REDIS_HOST="${U_HOST:-127.0.0.1}"
    REDIS_PORT="${U_PORT:-6379}"
    REDIS_HAS_AUTH=0
    [[ -n $U_USERINFO ]] && REDIS_HAS_AUTH=1
    REDIS_MASKED="$(mask_url "$REDIS_URL")"
}

# 0: PONG; 1: nothing answers; 2: something answers but not PONG (auth...).
redis_state() {
    if have redis-cli; then
        local out
        # redis-cli warns about passwords given with -u; drop that line.
        out="$(timeout 5 redis-cli -u "$REDIS_URL" ping 2>&1 | grep -v '^Warning: Using a password' || true)"
        [[ $out == PONG ]] && return 0
        tcp_open "$REDIS_HOST" "$REDIS_PORT" || return 1
        printf '%s\n' "${out:-no reply}" >"$WORKDIR/redis.err"
        return 2
    fi
    tcp_open "$REDIS_HOST" "$REDIS_PORT" || return 1
    return 0
}

redis_up() { redis_state; }

setup_redis() {
    redis_setup_vars
    local st=0
    redis_state || st=$?
    if [[ $st -eq 1 && $IN_CI -eq 1 ]]; then
        wait_until "$WAIT_SECS" redis_up && st=0
    fi
    if [[ $st -eq 2 ]]; then
        die "Redis at $REDIS_HOST:$REDIS_PORT answers but PING failed with REDIS_URL=$REDIS_MASKED: $(head -n 2 "$WORKDIR/redis.err")"
    fi
    [[ $st -eq 0 ]] && return 0

    is_local_host "$REDIS_HOST" ||
        die "Redis at $REDIS_HOST:$REDIS_PORT (from REDIS_URL) does not answer, and it is not local; start it or fix REDIS_URL"
    [[ $REDIS_HAS_AUTH -eq 0 ]] ||
        die "Redis at $REDIS_HOST:$REDIS_PORT does not answer and REDIS_URL has credentials; start a Redis configured with them yourself, or use SKIP_REDIS=1"

    if ! have redis-server || ! have redis-cli; then
        apt_install redis-server redis-tools
        # The package may have started its own service on the default port.
        st=0
        redis_state || st=$?
        [[ $st -eq 0 ]] && return 0
    fi
    say "starting redis-server on 127.0.0.1:$REDIS_PORT (no persistence)..."
    redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
        >"$WORKDIR/redis-start.log" 2>&1 || {
        cat "$WORKDIR/redis-start.log" >&2
        die "could not start redis-server"
    }
    wait_until "$WAIT_SECS" redis_up ||
        die "Redis did not answer PING on 127.0.0.1:$REDIS_PORT within ${WAIT_SECS}s"
}

# ---------------------------------------------------------------- browser --

# The review console's tests drive Debian's Chromium over WebDriver. Only
# `make test` asks for it (NEED_BROWSER=1). When it cannot be installed,
# setup says so and goes on: those tests then fail, naming what is missing.
setup_browser() {
    if have chromium && have chromedriver; then
        return 0
    fi
    if ! have apt-get; then
        say "warning: chromium and chromedriver are missing and apt-get is not available; the console's browser tests will fail until they are installed"
        return 0
    fi
    if ( apt_install chromium chromium-driver ); then
        return 0
    fi
    say "warning: could not install chromium + chromium-driver; the console's browser tests will fail until they are installed"
}

# -------------------------------------------------------------------- main --

[[ $WAIT_SECS =~ ^[0-9]+$ ]] || die "SETUP_WAIT_SECS must be a number of seconds"

check_toolchain
setup_postgres
summary="postgres ok ($PG_MASKED)"
if [[ $SKIP_REDIS == 1 ]]; then
    summary+=", redis skipped"
else
    setup_redis
    summary+=", redis ok ($REDIS_MASKED)"
fi
if [[ ${NEED_BROWSER:-0} == 1 ]]; then
    setup_browser
    if have chromium && have chromedriver; then
        summary+=", chromium ok"
    else
        summary+=", chromium MISSING"
    fi
fi
printf 'setup: %s\n' "$summary"
