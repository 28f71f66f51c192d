#!/usr/bin/env bash
# A throw-away PostgreSQL 15 with pgvector for development and CI (issue 13).
#
#   scripts/postgres-dev.sh start [PORT]   start one (or reuse the running one); the last line
#                                          of stdout is its URL, postgres://postgres@127.0.0.1:PORT/membank
#   scripts/postgres-dev.sh status         print the running one's URL (exit 1 when none runs)
#   scripts/postgres-dev.sh stop           stop it and remove its directory (exit 0 when none runs)
#
#   URL="$(scripts/postgres-dev.sh start | tail -n 1)"
#
# The server listens on 127.0.0.1 only (a free port, or PORT / $PGPORT_DEV), with its unix
# socket in its own directory, trust authentication, and a database `membank` with the
# `vector` extension created and checked. Its data directory is a fresh temporary directory
# under the state directory, $MEMBANK_PG_DEV_DIR (default ${TMPDIR:-/tmp}/membank-postgres-dev),
# which also records its data directory, port and process id; one instance per state
# directory. When run as root, the server runs as the `postgres` system user (PostgreSQL
# refuses to run as root).
#
# Missing Debian packages are installed (postgresql-15, and to build pgvector
# postgresql-server-dev-15 and build-essential; with sudo when not root). pgvector is not
# packaged for Debian 12, so it is built from Debian 13's (trixie) source package, fetched by
# `apt-get source` with a private apt configuration (the system's apt sources are left as they
# are), and installed into PostgreSQL 15's extension directory. The built tree is cached in
# ${XDG_CACHE_HOME:-~/.cache}/membank/pgvector-VERSION-pg15/: a later run only runs
# `make install` from it when the extension is missing, and does nothing when the same version
# is installed. Each step is one line on stderr; details go to a log shown when a step fails.
#
# On two cores (Debian 12, measured 2026-12-01): the first run took 36 s (21 s of apt-get
# update and installing postgresql-server-dev-15 with clang-14, llvm-14-dev being present
# already; 2 s to fetch the source; 12-14 s to build pgvector 0.8.0); a start with pgvector
# installed takes 1 s, one that installs it from the cache 1-2 s; stop takes a quarter second.
set -euo pipefail

prog=postgres-dev
pg_major=15
pg_bin=/usr/lib/postgresql/$pg_major/bin
pg_config=$pg_bin/pg_config
pg_ext_dir=/usr/share/postgresql/$pg_major/extension
pg_lib_dir=/usr/lib/postgresql/$pg_major/lib
db_name=membank
db_user=postgres
debian_source_suite=trixie
state_dir=${MEMBANK_PG_DEV_DIR:-${TMPDIR:-/tmp}/membank-postgres-dev}
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/membank
state_file=$state_dir/instance
started=$SECONDS

say() { printf '%s [%3ds] %s\n' "$prog" $((SECONDS - started)) "$*" >&2; }
die() {
  printf '%s: error: %s\n' "$prog" "$*" >&2
  exit 1
}

usage() {
  cat <<EOF
usage: scripts/postgres-dev.sh start [PORT] | status | stop

  start [PORT]  start a throw-away PostgreSQL $pg_major with pgvector on 127.0.0.1 (PORT, else
                \$PGPORT_DEV, else a free port), or reuse the one already running; the last
                line of stdout is its URL (postgres://$db_user@127.0.0.1:PORT/$db_name)
  status        print the running instance's URL; exit 1 when none runs
  stop          stop it and remove its directory; exit 0 when none runs

state directory: \$MEMBANK_PG_DEV_DIR (now $state_dir)
pgvector cache:  \${XDG_CACHE_HOME:-~/.cache}/membank (now $cache_root)
EOF
}

# A log for the current step's details, shown when it fails.
log=$(mktemp "${TMPDIR:-/tmp}/membank-postgres-dev-log.XXXXXX")
staging=''   # a pgvector build directory to remove on exit
aborting=''  # a run directory to stop and remove on exit (a start that has not finished)
on_exit() {
  [[ -z $aborting ]] || abort_start "$aborting" || true
  [[ -z $staging ]] || rm -rf -- "$staging" || true
  rm -f "$log"
}
trap on_exit EXIT

# run WHAT CMD...: run CMD with its output in the log; on failure show the log's tail and stop.
run() {
  local what=$1
  shift
  : >"$log"
  if ! "$@" >>"$log" 2>&1 </dev/null; then
    printf '%s: error: %s failed: %s\n' "$prog" "$what" "$*" >&2
    tail -n 40 "$log" | sed 's/^/  | /' >&2
    exit 1
  fi
}

# as_root CMD...: CMD as root (sudo when not root).
as_root() {
  if ((EUID == 0)); then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "this step needs root and sudo is not installed: $*"
  fi
}

# as_owner CMD...: CMD as the server's owner: `postgres` when run as root, else ourselves.
# From / so that the owner need not be able to read the current directory.
as_owner() {
  if ((EUID == 0)); then
    (cd / && runuser -u postgres -- "$@")
  else
    (cd / && "$@")
  fi
}

# --- Debian packages -------------------------------------------------------------------------

installed() { [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]; }

ensure_packages() {
  local missing=() p
  command -v dpkg-query >/dev/null || die "this script needs Debian (dpkg-query not found)"
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  ((${#missing[@]})) || return 0
  say "installing Debian packages: ${missing[*]} (apt-get update and install, a minute or two)"
  run "apt-get update" as_root apt-get update -qq
  run "apt-get install" as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# --- pgvector --------------------------------------------------------------------------------

# The pgvector version installed in PostgreSQL 15's directories, or nothing.
installed_pgvector() {
  local control=$pg_ext_dir/vector.control v
  [[ -f $control && -f $pg_lib_dir/vector.so ]] || return 0
  v=$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$control")
  [[ -n $v && -f $pg_ext_dir/vector--$v.sql ]] && printf '%s\n' "$v"
  return 0
}

# The newest cached build for this PostgreSQL major (its directory), or nothing.
cached_pgvector() {
  local stamp dirs=()
  for stamp in "$cache_root"/pgvector-*-pg"$pg_major"/stamp; do
    [[ -f $stamp && -d ${stamp%/stamp}/src ]] && dirs+=("${stamp%/stamp}")
  done
  ((${#dirs[@]})) || return 0
  printf '%s\n' "${dirs[@]}" | sort -V | tail -n 1
}

cache_version() { # DIR -> VERSION, from DIR = …/pgvector-VERSION-pgMAJOR
  local base=${1##*/}
  base=${base#pgvector-}
  printf '%s\n' "${base%-pg"$pg_major"}"
}

make_pgvector() { # DIR TARGET...: make in a pgvector tree, portable code (no -march=native)
  local dir=$1
  shift
  make -C "$dir" PG_CONFIG="$pg_config" OPTFLAGS="" "$@"
}

apt_source() ( # DIR APT-OPTIONS...: apt-get source pgvector into DIR
  cd "$1"
  shift
  apt-get "$@" -qq source pgvector
)

# Fetch and build pgvector into the cache; sets built_dir to the cached build.
build_pgvector() {
  local aptd apt_opts src dsc deb_version version
  staging=$(mktemp -d "$cache_root/.pgvector-build.XXXXXX")
  aptd=$staging/apt
  mkdir -p "$aptd/lists/partial" "$aptd/cache/archives/partial" "$staging/source"
  printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main\n' \
    "$debian_source_suite" >"$aptd/sources.list"
  # Only this file's sources, lists and caches: the system's apt state is not touched.
  apt_opts=(-o "Dir::Etc::sourcelist=$aptd/sources.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$aptd/lists" -o "Dir::Cache=$aptd/cache")
  # As root apt downloads as the _apt user, who cannot reach a private cache (~root is 0700)
  # and would fall back, with a warning, to downloading as root: say so up front.
  if ((EUID == 0)); then apt_opts+=(-o "APT::Sandbox::User=root"); fi
  say "fetching pgvector's Debian source package ($debian_source_suite) with a private apt configuration"
  run "apt-get update ($debian_source_suite sources)" apt-get "${apt_opts[@]}" -qq update
  run "apt-get source pgvector" apt_source "$staging/source" "${apt_opts[@]}"
  src=$(find "$staging/source" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' -print -quit)
  dsc=$(find "$staging/source" -mindepth 1 -maxdepth 1 -type f -name 'pgvector_*.dsc' -print -quit)
  [[ -n $src && -f $src/vector.control ]] || die "apt-get source pgvector gave no pgvector tree in $staging/source"
  deb_version=${dsc##*/pgvector_}
  deb_version=${deb_version%.dsc}
  version=$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$src/vector.control")
  [[ -n $version ]] || die "no default_version in $src/vector.control"
  say "building pgvector $version (Debian $deb_version) against PostgreSQL $pg_major"
  run "building pgvector" make_pgvector "$src" -j"$(nproc 2>/dev/null || echo 2)"
  built_dir=$cache_root/pgvector-$version-pg$pg_major
  mkdir -p "$staging/out"
  mv "$src" "$staging/out/src"
  printf 'pgvector %s (Debian source %s, %s) built for PostgreSQL %s on %s\n' \
    "$version" "$deb_version" "$debian_source_suite" "$pg_major" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    >"$staging/out/stamp"
  rm -rf "$built_dir"
  mv "$staging/out" "$built_dir"
  rm -rf "$staging"
  staging=''
}

ensure_pgvector() {
  local have cached lock_fd cached_version
  have=$(installed_pgvector)
  cached=$(cached_pgvector)
  cached_version=${cached:+$(cache_version "$cached")}
  if [[ -n $have && ( -z $cached || $have == "$cached_version" ) ]]; then
    say "pgvector $have is installed in PostgreSQL $pg_major"
    return 0
  fi
  ensure_packages "postgresql-server-dev-$pg_major" build-essential dpkg-dev
  mkdir -p "$cache_root"
  # One build at a time per cache (another start may be building the same thing).
  exec {lock_fd}>"$cache_root/.pgvector.lock"
  flock "$lock_fd"
  cached=$(cached_pgvector)
  if [[ -z $cached ]]; then
    build_pgvector
    cached=$built_dir
  fi
  cached_version=$(cache_version "$cached")
  have=$(installed_pgvector)
  if [[ $have != "$cached_version" ]]; then
    say "installing pgvector $cached_version into PostgreSQL $pg_major (make install from $cached)"
    run "make install (pgvector)" as_root make -C "$cached/src" PG_CONFIG="$pg_config" OPTFLAGS="" install
    have=$(installed_pgvector)
    [[ $have == "$cached_version" ]] ||
      die "after make install, PostgreSQL $pg_major has pgvector '${have:-none}', not $cached_version"
  fi
  exec {lock_fd}>&-
}

# --- the instance ----------------------------------------------------------------------------

# Read the state file into inst_* variables; false when there is none.
load_state() {
  inst_run_dir='' inst_data='' inst_port='' inst_pid='' inst_url=''
  [[ -f $state_file ]] || return 1
  local key value
  while IFS='=' read -r key value; do
    case $key in
      run_dir) inst_run_dir=$value ;;
      data_dir) inst_data=$value ;;
      port) inst_port=$value ;;
      pid) inst_pid=$value ;;
      url) inst_url=$value ;;
    esac
  done <"$state_file"
  [[ -n $inst_data && -n $inst_run_dir ]] || die "state file $state_file is incomplete; remove it and $state_dir/run.* by hand"
}

# server_pid DATA: print the pid of the postmaster running on DATA; false when none runs.
# (Not `pg_ctl status`, which takes a dead postmaster that is not yet reaped, a zombie, for a
# running one.)
server_pid() {
  local data=$1 pid stat cmdline
  pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != [ZX] ]] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmdline == *postgres*"$data"* ]] || return 1
  printf '%s\n' "$pid"
}

# True when the recorded server runs.
state_alive() { [[ -n $inst_data ]] && server_pid "$inst_data" >/dev/null; }

# Remove a run directory, only if it is one of ours.
remove_run_dir() {
  local dir=$1
  [[ -n $dir && $dir == "$state_dir"/run.* && -d $dir ]] || return 0
  rm -rf -- "$dir"
}


# A CA and a server certificate signed by it, valid for localhost and 127.0.0.1, in $1.
make_certificates() {
  local dir=$1
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=membank dev CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" &&
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
      -keyout "$dir/server.key" -out "$dir/server.csr" &&
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$dir/san.ext" &&
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
      -days 30 -extfile "$dir/san.ext" -out "$dir/server.crt" &&
    chmod 600 "$dir/server.key" && chmod 644 "$dir/ca.crt"
}

port_free() {
  local port=$1
  if command -v ss >/dev/null && [[ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]]; then
    return 1
  fi
  ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

pick_port() {
  local i port
  for ((i = 0; i < 100; i++)); do
    port=$((20000 + RANDOM % 40000))
    port_free "$port" && { printf '%s\n' "$port"; return 0; }
  done
  die "found no free loopback port"
}

psql_q() { # URL SQL: one query, unaligned, no psqlrc
  env -u PGSERVICE -u PGOPTIONS "$pg_bin/psql" "$1" -X -q -A -t -v ON_ERROR_STOP=1 -c "$2"
}

lock_state() {
  mkdir -p "$state_dir" 2>/dev/null || die "cannot create the state directory $state_dir (set MEMBANK_PG_DEV_DIR)"
  [[ -w $state_dir ]] || die "the state directory $state_dir is not writable by $(id -un) (set MEMBANK_PG_DEV_DIR)"
  exec {state_lock}>"$state_dir/lock"
  flock "$state_lock"
}

cmd_start() {
  local want_port=${1:-${PGPORT_DEV:-}} auto_port=1 port run_dir data attempt locale pid url
  local version distance
  if [[ -n $want_port ]]; then
    if ! [[ $want_port =~ ^[0-9]+$ ]] || ((want_port < 1 || want_port > 65535)); then
      die "not a port: $want_port"
    fi
    auto_port=0
  fi
  lock_state
  if load_state; then
    if state_alive; then
      if [[ -n $want_port && $want_port != "$inst_port" ]]; then
        die "an instance already runs on port $inst_port (data $inst_data); stop it first to use port $want_port"
      fi
      say "reusing the instance already running on port $inst_port (pid $inst_pid, data $inst_data)"
      printf '%s\n' "$inst_url"
      return 0
    fi
    say "removing a stale instance record (its server is not running): $inst_run_dir"
    remove_run_dir "$inst_run_dir"
    rm -f "$state_file"
  fi
  if ((!auto_port)) && ! port_free "$want_port"; then
    die "port $want_port on 127.0.0.1 is in use"
  fi

  ensure_packages "postgresql-$pg_major"
  [[ -x $pg_bin/initdb && -x $pg_bin/pg_ctl && -x $pg_bin/psql ]] || die "PostgreSQL $pg_major's programs are not in $pg_bin"
  ensure_pgvector

  run_dir=$(mktemp -d "$state_dir/run.XXXXXX")
  # Until the instance is checked, a failure stops it and removes its directory.
  aborting=$run_dir
  data=$run_dir/data
  if ((EUID == 0)); then
    getent passwd postgres >/dev/null || die "no postgres system user (the postgresql-$pg_major package creates it)"
    chown postgres: "$run_dir"
  fi
  chmod 700 "$run_dir"
  as_owner test -w "$run_dir" ||
    die "$run_dir is not writable by the server's user (postgres); is a parent directory private? set MEMBANK_PG_DEV_DIR (e.g. under /tmp)"
  # A unix socket path has at most 107 bytes.
  ((${#run_dir} + 20 <= 107)) || die "the path $run_dir is too long for a unix socket; set a shorter MEMBANK_PG_DEV_DIR"

  locale=C
  if locale -a 2>/dev/null | grep -ix 'C.utf-\?8' >/dev/null; then locale=C.UTF-8; fi
  say "initdb into $data (superuser $db_user, trust authentication, UTF8, locale $locale)"
  run "initdb" as_owner "$pg_bin/initdb" -D "$data" -U "$db_user" -A trust -E UTF8 --locale="$locale" --no-sync
  cat >>"$data/postgresql.conf" <<EOF

# scripts/postgres-dev.sh: loopback only, the socket in the run directory, the port in its own file
listen_addresses = '127.0.0.1'
unix_socket_directories = '$run_dir'
include_if_exists = 'membank-port.conf'
EOF
  # TLS as well (the store's sslmode handling is tested against it): a private CA and a
  # certificate for localhost and 127.0.0.1, made with openssl when it is installed. Plain
  # connections are still accepted; `ca.crt` in the run directory is the sslrootcert.
  if command -v openssl >/dev/null; then
    say "TLS: a private CA and a server certificate for localhost/127.0.0.1 ($run_dir/ca.crt)"
    run "making TLS certificates" make_certificates "$run_dir"
    if ((EUID == 0)); then chown postgres: "$run_dir/server.crt" "$run_dir/server.key"; fi
    cat >>"$data/postgresql.conf" <<EOF
ssl = on
ssl_cert_file = '$run_dir/server.crt'
ssl_key_file = '$run_dir/server.key'
EOF
  fi

  for ((attempt = 1; ; attempt++)); do
    if ((auto_port)); then port=$(pick_port); else port=$want_port; fi
    printf 'port = %s\n' "$port" >"$data/membank-port.conf"
    if ((EUID == 0)); then chown postgres: "$data/membank-port.conf"; fi
    say "starting PostgreSQL $pg_major on 127.0.0.1:$port"
    # The server must not inherit the state lock (a later stop would wait on it forever).
    if as_owner "$pg_bin/pg_ctl" -D "$data" -l "$run_dir/postgres.log" -w -t 60 start \
      >>"$log" 2>&1 </dev/null {state_lock}>&-; then
      break
    fi
    if ((auto_port && attempt < 5)) && grep -q 'could not bind\|Address already in use' "$run_dir/postgres.log" 2>/dev/null; then
      say "port $port was taken meanwhile; trying another"
      continue
    fi
    printf '%s: error: PostgreSQL did not start; its log (%s):\n' "$prog" "$run_dir/postgres.log" >&2
    tail -n 30 "$run_dir/postgres.log" 2>/dev/null | sed 's/^/  | /' >&2 || true
    exit 1
  done
  pid=$(head -n 1 "$data/postmaster.pid")
  url="postgres://$db_user@127.0.0.1:$port/$db_name"
  {
    printf 'run_dir=%s\n' "$run_dir"
    printf 'data_dir=%s\n' "$data"
    printf 'port=%s\n' "$port"
    printf 'pid=%s\n' "$pid"
    printf 'url=%s\n' "$url"
  } >"$state_file.tmp"
  mv "$state_file.tmp" "$state_file"

  say "creating database $db_name and extension vector"
  run "CREATE DATABASE" psql_q "postgres://$db_user@127.0.0.1:$port/postgres" "CREATE DATABASE $db_name"
  run "CREATE EXTENSION vector" psql_q "$url" "CREATE EXTENSION vector"
  version=$(psql_q "$url" "SELECT extversion FROM pg_extension WHERE extname = 'vector'") ||
    die "could not read the vector extension's version"
  distance=$(psql_q "$url" "SELECT '[1,2,3]'::vector <=> '[1,2,4]'::vector") ||
    die "a vector query failed"
  # 1 - 17/sqrt(14*21) = 0.0085...
  awk -v d="$distance" 'BEGIN { exit !(d > 0.0085 && d < 0.0086) }' ||
    die "'[1,2,3]' <=> '[1,2,4]' gave '$distance', not about 0.00853"
  aborting=''
  say "ready: pid $pid, data $data, pgvector $version ('[1,2,3]' <=> '[1,2,4]' = $distance); stop with: scripts/postgres-dev.sh stop"
  printf '%s\n' "$url"
}

# A start that failed after creating its directory: stop the server if it runs, forget it.
abort_start() {
  local run_dir=$1 what=''
  if [[ -f $run_dir/data/postmaster.pid ]]; then
    as_owner "$pg_bin/pg_ctl" -D "$run_dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    what='stopped the new server and '
  fi
  remove_run_dir "$run_dir"
  say "start failed: ${what}removed $run_dir"
  if load_state 2>/dev/null && [[ $inst_run_dir == "$run_dir" ]]; then rm -f "$state_file"; fi
}

cmd_stop() {
  local i pid
  if [[ ! -f $state_file ]]; then
    say "nothing to stop: no instance recorded in $state_dir"
    return 0
  fi
  lock_state
  load_state || { say "nothing to stop: no instance recorded in $state_dir"; return 0; }
  if state_alive; then
    say "stopping PostgreSQL on port $inst_port (pid $inst_pid, data $inst_data)"
    if ! as_owner "$pg_bin/pg_ctl" -D "$inst_data" -m immediate -w -t 60 stop >>"$log" 2>&1 </dev/null; then
      # pg_ctl could not: tell the postmaster itself to quit at once, if it still runs.
      if pid=$(server_pid "$inst_data"); then
        say "pg_ctl stop failed; sending SIGQUIT to the postmaster, pid $pid"
        kill -QUIT "$pid" 2>/dev/null || true
        for ((i = 0; i < 100; i++)); do
          server_pid "$inst_data" >/dev/null || break
          sleep 0.1
        done
        ! server_pid "$inst_data" >/dev/null || die "pid $pid did not stop; its data is in $inst_data"
      else
        tail -n 20 "$log" | sed 's/^/  | /' >&2
        die "could not stop the server in $inst_data"
      fi
    fi
  else
    say "the recorded instance (port $inst_port, pid $inst_pid) was not running"
  fi
  remove_run_dir "$inst_run_dir"
  rm -f "$state_file"
  say "stopped; removed $inst_run_dir"
}

cmd_status() {
  if load_state && state_alive; then
    say "running on port $inst_port (pid $inst_pid, data $inst_data)"
    printf '%s\n' "$inst_url"
    return 0
  fi
  say "not running"
  return 1
}

case ${1:-} in
  start)
    shift
    (($# <= 1)) || { usage >&2; exit 2; }
    cmd_start "$@"
    ;;
  stop)
    (($# == 1)) || { usage >&2; exit 2; }
    cmd_stop
    ;;
  status)
    (($# == 1)) || { usage >&2; exit 2; }
    cmd_status
    ;;
  -h | --help | help)
    usage
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac
