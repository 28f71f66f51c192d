#!/usr/bin/env bash
# A throw-away Citus cluster for development and CI (issue 26): a coordinator and two
# workers, each a PostgreSQL 15 with `citus` preloaded and the `citus` and `vector`
# extensions created in a database `membank`, the workers added to the coordinator.
#
#   scripts/citus-dev.sh start     start one (or reuse the running one); the last line of stdout
#                                  is the coordinator's URL, postgres://postgres@127.0.0.1:PORT/membank
#   scripts/citus-dev.sh status    print the running cluster's coordinator URL (exit 1 when none runs)
#   scripts/citus-dev.sh stop      stop every node and remove the cluster's directory (exit 0 when none runs)
#   scripts/citus-dev.sh node-stop NAME | node-start NAME
#                                  stop (immediate) or start one node (coordinator, worker1, worker2,
#                                  worker3 once added) of the running cluster, for fault tests; its
#                                  data is kept
#   scripts/citus-dev.sh node-add  start a third worker, worker3, and add it to the coordinator
#                                  (citus_add_node; its shards come only with a rebalance); prints
#                                  its name as the last line of stdout. `stop` stops it too
#
# Conventions are those of scripts/postgres-dev.sh: loopback only, free ports, trust
# authentication, a state directory ($MEMBANK_CITUS_DEV_DIR, default
# ${TMPDIR:-/tmp}/membank-citus-dev) recording each node's data directory, port and process id,
# one line per step on stderr with details in a log shown when a step fails, and `stop`
# removes everything. When run as root the servers run as the `postgres` system user.
#
# Citus is not packaged for Debian 12: it is built from the source archive vendored at
# ../shared/vendor/citus-12.1.12.tar.gz (relative to the repository; or $MEMBANK_CITUS_TARBALL)
# into ${XDG_CACHE_HOME:-~/.cache}/membank/citus-12.1.12-pg15/ once (about 3 CPU-minutes),
# after installing its Debian build dependencies; a later start only runs `make install`
# from the cached tree when PostgreSQL 15 lacks it. Nothing of Citus is copied into the
# repository. pgvector is installed the way scripts/postgres-dev.sh installs it (that script
# is run once against a scratch state directory when PostgreSQL 15 has no `vector`).
set -euo pipefail

prog=citus-dev
pg_major=15
pg_bin=/usr/lib/postgresql/$pg_major/bin
pg_config=$pg_bin/pg_config
pg_ext_dir=/usr/share/postgresql/$pg_major/extension
pg_lib_dir=/usr/lib/postgresql/$pg_major/lib
db_name=membank
db_user=postgres
citus_version=12.1.12
repo_root=$(cd "$(dirname "$0")/.." && pwd)
tarball=${MEMBANK_CITUS_TARBALL:-$repo_root/../shared/vendor/citus-$citus_version.tar.gz}
tarball_sha256=c66b8c6544a6f7e55fbbcca55258c6f9ad91d3486bb7404bb883b689f39ecc86
state_dir=${MEMBANK_CITUS_DEV_DIR:-${TMPDIR:-/tmp}/membank-citus-dev}
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/membank
cache_dir=$cache_root/citus-$citus_version-pg$pg_major
state_file=$state_dir/cluster
base_nodes=(coordinator worker1 worker2)
nodes=("${base_nodes[@]}")
# The worker `node-add` adds; once recorded in the state file it is one of the nodes.
extra_worker=worker3
started=$SECONDS

say() { printf '%s [%3ds] %s\n' "$prog" $((SECONDS - started)) "$*" >&2; }
die() {
  printf '%s: error: %s\n' "$prog" "$*" >&2
  exit 1
}

usage() {
  cat <<USAGE
usage: scripts/citus-dev.sh start | status | stop | node-stop NAME | node-start NAME | node-add

  start            start a throw-away Citus $citus_version cluster (a coordinator and two workers,
                   PostgreSQL $pg_major with pgvector) on 127.0.0.1, or reuse the running one; the
                   last line of stdout is the coordinator's URL (postgres://$db_user@127.0.0.1:PORT/$db_name)
  status           print the running cluster's coordinator URL; exit 1 when none runs
  stop             stop every node and remove the cluster's directory; exit 0 when none runs
  node-stop NAME   stop one node (coordinator, worker1, worker2, $extra_worker) at once, keeping its data
  node-start NAME  start a node stopped by node-stop
  node-add         start a third worker, $extra_worker, and add it to the coordinator (citus_add_node;
                   shards move to it only with citus_rebalance_start); prints its name

state directory: \$MEMBANK_CITUS_DEV_DIR (now $state_dir)
Citus cache:     $cache_dir
Citus source:    \$MEMBANK_CITUS_TARBALL (now $tarball)
USAGE
}

log=$(mktemp "${TMPDIR:-/tmp}/membank-citus-dev-log.XXXXXX")
staging=''
aborting=''
adding=''
on_exit() {
  [[ -z $aborting ]] || abort_start "$aborting" || true
  [[ -z $adding ]] || abort_add || true
  [[ -z $staging ]] || rm -rf -- "$staging" || true
  rm -f "$log"
}
trap on_exit EXIT

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

as_root() {
  if ((EUID == 0)); then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "this step needs root and sudo is not installed: $*"
  fi
}

as_owner() {
  if ((EUID == 0)); then
    (cd / && runuser -u postgres -- "$@")
  else
    (cd / && "$@")
  fi
}

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

# --- Citus -----------------------------------------------------------------------------------

installed_citus() { # the Citus version installed in PostgreSQL 15, or nothing
  local control=$pg_ext_dir/citus.control v
  [[ -f $control && -f $pg_lib_dir/citus.so ]] || return 0
  v=$(sed -n "s/^[[:space:]]*default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$control")
  printf '%s\n' "$v"
}

build_citus() {
  local sum
  [[ -f $tarball ]] || die "the Citus source archive is not at $tarball (set MEMBANK_CITUS_TARBALL)"
  sum=$(sha256sum "$tarball" | cut -d' ' -f1)
  [[ $sum == "$tarball_sha256" ]] || die "$tarball has sha256 $sum, not $tarball_sha256"
  ensure_packages "postgresql-server-dev-$pg_major" build-essential libcurl4-openssl-dev liblz4-dev \
    libzstd-dev libkrb5-dev libssl-dev libselinux1-dev libxslt1-dev libpam0g-dev libreadline-dev autoconf flex
  # Built where it stays: Citus's configure records its source directory's absolute path,
  # which `make install` uses later. The stamp, written last, marks a finished build.
  rm -rf -- "$cache_dir"
  mkdir -p "$cache_dir"
  staging=$cache_dir
  say "unpacking $tarball into $cache_dir"
  run "tar" tar -xzf "$tarball" -C "$cache_dir"
  local src
  src=$(find "$cache_dir" -mindepth 1 -maxdepth 1 -type d -print -quit)
  [[ -n $src && -f $src/configure ]] || die "no Citus tree with a configure script in $tarball"
  mv "$src" "$cache_dir/src"
  src=$cache_dir/src
  say "building Citus $citus_version against PostgreSQL $pg_major (about 3 CPU-minutes)"
  run "configure (Citus)" bash -c "cd '$src' && ./configure PG_CONFIG='$pg_config'"
  run "make (Citus)" make -C "$src" -j"$(nproc 2>/dev/null || echo 2)"
  printf 'Citus %s (%s) built for PostgreSQL %s on %s\n' "$citus_version" "$tarball_sha256" "$pg_major" \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$cache_dir/stamp"
  staging=''
}

ensure_citus() {
  local have lock_fd
  have=$(installed_citus)
  if [[ -n $have && -f $cache_dir/stamp ]]; then
    say "Citus $have is installed in PostgreSQL $pg_major"
    return 0
  fi
  mkdir -p "$cache_root"
  exec {lock_fd}>"$cache_root/.citus.lock"
  flock "$lock_fd"
  [[ -f $cache_dir/stamp && -d $cache_dir/src ]] || build_citus
  have=$(installed_citus)
  if [[ -z $have ]]; then
    say "installing Citus $citus_version into PostgreSQL $pg_major (make install from $cache_dir)"
    run "make install (Citus)" as_root make -C "$cache_dir/src" install
    have=$(installed_citus)
    [[ -n $have ]] || die "after make install, PostgreSQL $pg_major has no citus extension"
  fi
  exec {lock_fd}>&-
}

ensure_pgvector() {
  if [[ -f $pg_ext_dir/vector.control && -f $pg_lib_dir/vector.so ]]; then return 0; fi
  say "pgvector is missing: installing it with scripts/postgres-dev.sh (a scratch instance, stopped at once)"
  local scratch
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/membank-citus-pgvector.XXXXXX")
  MEMBANK_PG_DEV_DIR=$scratch "$repo_root/scripts/postgres-dev.sh" start >/dev/null
  MEMBANK_PG_DEV_DIR=$scratch "$repo_root/scripts/postgres-dev.sh" stop
  rm -rf -- "$scratch"
}

# --- the cluster -----------------------------------------------------------------------------

load_state() { # the state file into run_dir, port_NAME
  run_dir=''
  [[ -f $state_file ]] || return 1
  local key value
  while IFS='=' read -r key value; do
    case $key in
      run_dir) run_dir=$value ;;
      port_*) printf -v "$key" '%s' "$value" ;;
    esac
  done <"$state_file"
  if [[ -n ${port_worker3:-} ]]; then nodes=("${base_nodes[@]}" "$extra_worker"); fi
  [[ -n $run_dir ]] || die "state file $state_file is incomplete; remove it and $state_dir/run.* by hand"
}

node_port() { local v="port_$1"; printf '%s\n' "${!v:-}"; }

server_pid() { # DATA: the pid of the postmaster running on DATA; false when none runs
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

remove_run_dir() {
  local dir=$1
  [[ -n $dir && $dir == "$state_dir"/run.* && -d $dir ]] || return 0
  rm -rf -- "$dir"
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

psql_q() { env -u PGSERVICE -u PGOPTIONS "$pg_bin/psql" "$1" -X -q -A -t -v ON_ERROR_STOP=1 -c "$2"; }

lock_state() {
  mkdir -p "$state_dir" 2>/dev/null || die "cannot create the state directory $state_dir (set MEMBANK_CITUS_DEV_DIR)"
  [[ -w $state_dir ]] || die "the state directory $state_dir is not writable by $(id -un) (set MEMBANK_CITUS_DEV_DIR)"
  exec {state_lock}>"$state_dir/lock"
  flock "$state_lock"
}

cluster_alive() { # every node runs
  local n
  [[ -n $run_dir ]] || return 1
  for n in "${nodes[@]}"; do server_pid "$run_dir/$n" >/dev/null || return 1; done
}

start_node() { # NAME: start one node's postmaster on its recorded port
  local n=$1
  as_owner "$pg_bin/pg_ctl" -D "$run_dir/$n" -l "$run_dir/$n.log" -w -t 60 start \
    >>"$log" 2>&1 </dev/null {state_lock}>&-
}

# A CA and a server certificate signed by it, valid for localhost and 127.0.0.1, in $1 (as
# postgres-dev.sh makes them). Without one, CREATE EXTENSION citus turns TLS on with a
# self-signed X.509 v1 certificate, which rustls refuses even under sslmode=prefer.
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

init_node() { # NAME LOCALE: initdb and configure one node
  local n=$1 locale=$2 data=$run_dir/$1
  run "initdb ($n)" as_owner "$pg_bin/initdb" -D "$data" -U "$db_user" -A trust -E UTF8 --locale="$locale" --no-sync
  cat >>"$data/postgresql.conf" <<CONF

# scripts/citus-dev.sh: Citus preloaded, loopback only, the socket in the run directory
shared_preload_libraries = 'citus'
listen_addresses = '127.0.0.1'
unix_socket_directories = '$run_dir'
max_connections = 300
max_prepared_transactions = 100
wal_level = logical
fsync = off
ssl = on
ssl_cert_file = '$run_dir/server.crt'
ssl_key_file = '$run_dir/server.key'
include_if_exists = 'membank-port.conf'
CONF
}

node_locale() { # the locale every node is made with
  if locale -a 2>/dev/null | grep -ix 'C.utf-\?8' >/dev/null; then echo C.UTF-8; else echo C; fi
}

new_node() { # NAME LOCALE: initdb a node, start it on a free port recorded in the state file,
  # and create the database with citus and vector in it
  local n=$1 locale=$2 port attempt
  say "initdb $n into $run_dir/$n (citus preloaded, trust authentication, locale $locale)"
  init_node "$n" "$locale"
  for ((attempt = 1; ; attempt++)); do
    port=$(pick_port)
    printf 'port = %s\n' "$port" >"$run_dir/$n/membank-port.conf"
    if ((EUID == 0)); then chown postgres: "$run_dir/$n/membank-port.conf"; fi
    say "starting $n on 127.0.0.1:$port"
    start_node "$n" && break
    if ((attempt < 5)) && grep -q 'could not bind\|Address already in use' "$run_dir/$n.log" 2>/dev/null; then
      continue
    fi
    tail -n 30 "$run_dir/$n.log" 2>/dev/null | sed 's/^/  | /' >&2 || true
    die "$n did not start; its log is $run_dir/$n.log"
  done
  printf -v "port_$n" '%s' "$port"
  printf 'port_%s=%s\n' "$n" "$port" >>"$state_file"
  say "creating database $db_name with extensions citus and vector on $n"
  run "CREATE DATABASE ($n)" psql_q "postgres://$db_user@127.0.0.1:$port/postgres" "CREATE DATABASE $db_name"
  run "CREATE EXTENSION ($n)" psql_q "postgres://$db_user@127.0.0.1:$port/$db_name" \
    "CREATE EXTENSION citus; CREATE EXTENSION vector"
}

cmd_start() {
  local n locale url v
  lock_state
  if load_state; then
    if cluster_alive; then
      say "reusing the cluster already running (coordinator on port $port_coordinator, $run_dir)"
      printf 'postgres://%s@127.0.0.1:%s/%s\n' "$db_user" "$port_coordinator" "$db_name"
      return 0
    fi
    say "stopping and removing a stale cluster record (not every node runs): $run_dir"
    stop_all
  fi
  ensure_packages "postgresql-$pg_major" openssl
  ensure_pgvector
  ensure_citus

  run_dir=$(mktemp -d "$state_dir/run.XXXXXX")
  aborting=$run_dir
  if ((EUID == 0)); then
    getent passwd postgres >/dev/null || die "no postgres system user (the postgresql-$pg_major package creates it)"
    chown postgres: "$run_dir"
  fi
  chmod 700 "$run_dir"
  as_owner test -w "$run_dir" ||
    die "$run_dir is not writable by the server's user (postgres); set MEMBANK_CITUS_DEV_DIR (e.g. under /tmp)"
  ((${#run_dir} + 20 <= 107)) || die "the path $run_dir is too long for a unix socket; set a shorter MEMBANK_CITUS_DEV_DIR"
  locale=$(node_locale)
  printf 'run_dir=%s\n' "$run_dir" >"$state_file"
  say "TLS: a private CA and a server certificate for localhost/127.0.0.1 ($run_dir/ca.crt), for every node"
  run "making TLS certificates" make_certificates "$run_dir"
  if ((EUID == 0)); then chown postgres: "$run_dir/server.crt" "$run_dir/server.key"; fi
  for n in "${nodes[@]}"; do new_node "$n" "$locale"; done
  url="postgres://$db_user@127.0.0.1:$port_coordinator/$db_name"
  say "adding the workers to the coordinator"
  run "citus_set_coordinator_host" psql_q "$url" "SELECT citus_set_coordinator_host('127.0.0.1', $port_coordinator)"
  for n in worker1 worker2; do
    run "citus_add_node ($n)" psql_q "$url" "SELECT citus_add_node('127.0.0.1', $(node_port "$n"))"
  done
  v=$(psql_q "$url" "SELECT count(*) FROM citus_get_active_worker_nodes()") || die "could not list the workers"
  [[ $v == 2 ]] || die "the coordinator sees $v active workers, not 2"
  v=$(psql_q "$url" "SELECT extversion FROM pg_extension WHERE extname = 'citus'")
  aborting=''
  say "ready: Citus $v, coordinator on $port_coordinator, workers on $port_worker1 and $port_worker2; stop with: scripts/citus-dev.sh stop"
  printf '%s\n' "$url"
}

stop_node() { # NAME: stop one node at once if it runs
  local n=$1 pid i
  [[ -d $run_dir/$n ]] || return 0
  server_pid "$run_dir/$n" >/dev/null || return 0
  if ! as_owner "$pg_bin/pg_ctl" -D "$run_dir/$n" -m immediate -w -t 60 stop >>"$log" 2>&1 </dev/null; then
    if pid=$(server_pid "$run_dir/$n"); then
      kill -QUIT "$pid" 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do
        server_pid "$run_dir/$n" >/dev/null || break
        sleep 0.1
      done
      ! server_pid "$run_dir/$n" >/dev/null || die "pid $pid ($n) did not stop; its data is in $run_dir/$n"
    fi
  fi
}

stop_all() {
  local n
  for n in "${nodes[@]}"; do stop_node "$n"; done
  remove_run_dir "$run_dir"
  rm -f "$state_file"
  nodes=("${base_nodes[@]}")
  port_worker3=''
}

abort_start() {
  run_dir=$1
  stop_all
  say "start failed: stopped the new nodes and removed $1"
}

cmd_stop() {
  if [[ ! -f $state_file ]]; then
    say "nothing to stop: no cluster recorded in $state_dir"
    return 0
  fi
  lock_state
  load_state || { say "nothing to stop: no cluster recorded in $state_dir"; return 0; }
  say "stopping the coordinator and workers ($run_dir)"
  stop_all
  say "stopped; removed $run_dir"
}

cmd_status() {
  if load_state && cluster_alive; then
    say "running: coordinator on port $port_coordinator, workers on $port_worker1 and $port_worker2${port_worker3:+ and $port_worker3} ($run_dir)"
    printf 'postgres://%s@127.0.0.1:%s/%s\n' "$db_user" "$port_coordinator" "$db_name"
    return 0
  fi
  say "not running"
  return 1
}

check_node_name() { # after load_state: $extra_worker is a node once node-add made it
  local n
  for n in "${nodes[@]}"; do [[ $1 != "$n" ]] || return 0; done
  die "no node named '$1' (${nodes[*]})"
}

# A node-add that failed: its worker stopped, its directory removed, its port forgotten, so
# the cluster is as it was before and node-add can be run again.
abort_add() {
  local url="postgres://$db_user@127.0.0.1:$port_coordinator/$db_name"
  if [[ -n ${port_worker3:-} ]] &&
    [[ $(psql_q "$url" "SELECT count(*) FROM pg_dist_node WHERE nodeport = $port_worker3" 2>/dev/null) == 1 ]]; then
    psql_q "$url" "SELECT citus_remove_node('127.0.0.1', $port_worker3)" >/dev/null 2>&1 || true
  fi
  stop_node "$extra_worker"
  rm -rf -- "${run_dir:?}/$extra_worker"
  sed -i "/^port_$extra_worker=/d" "$state_file"
  say "node-add failed: stopped $extra_worker and removed $run_dir/$extra_worker; the cluster has its two workers"
}

cmd_node_add() {
  local url v
  lock_state
  load_state || die "no cluster is recorded in $state_dir"
  cluster_alive || die "not every node of the cluster runs (${nodes[*]}); start them first"
  url="postgres://$db_user@127.0.0.1:$port_coordinator/$db_name"
  if [[ -n ${port_worker3:-} ]]; then
    v=$(psql_q "$url" "SELECT count(*) FROM pg_dist_node WHERE nodeport = $port_worker3 AND isactive") ||
      die "could not ask the coordinator about $extra_worker"
    [[ $v == 1 ]] || die "$extra_worker runs on port $port_worker3 but the coordinator does not list it as active"
    say "$extra_worker was added already (port $port_worker3)"
    printf '%s\n' "$extra_worker"
    return 0
  fi
  adding=1
  # What a node-add killed before it could clean up left behind.
  stop_node "$extra_worker"
  rm -rf -- "${run_dir:?}/$extra_worker"
  new_node "$extra_worker" "$(node_locale)"
  nodes+=("$extra_worker")
  say "adding $extra_worker to the coordinator (its shards come with citus_rebalance_start)"
  run "citus_add_node ($extra_worker)" psql_q "$url" "SELECT citus_add_node('127.0.0.1', $port_worker3)"
  v=$(psql_q "$url" "SELECT count(*) FROM citus_get_active_worker_nodes()") || die "could not list the workers"
  [[ $v == 3 ]] || die "the coordinator sees $v active workers, not 3"
  adding=''
  say "ready: $extra_worker on port $port_worker3; the coordinator has 3 workers"
  printf '%s\n' "$extra_worker"
}

cmd_node() { # stop|start NAME
  local what=$1 n=$2
  lock_state
  load_state || die "no cluster is recorded in $state_dir"
  check_node_name "$n"
  case $what in
    stop)
      say "stopping $n (immediate; its data is kept)"
      stop_node "$n"
      ;;
    start)
      if server_pid "$run_dir/$n" >/dev/null; then
        say "$n already runs"
        return 0
      fi
      say "starting $n on port $(node_port "$n")"
      start_node "$n" || {
        tail -n 20 "$run_dir/$n.log" | sed 's/^/  | /' >&2
        die "$n did not start"
      }
      ;;
  esac
}

case ${1:-} in
  start)
    (($# == 1)) || { usage >&2; exit 2; }
    cmd_start
    ;;
  stop)
    (($# == 1)) || { usage >&2; exit 2; }
    cmd_stop
    ;;
  status)
    (($# == 1)) || { usage >&2; exit 2; }
    cmd_status
    ;;
  node-stop | node-start)
    (($# == 2)) || { usage >&2; exit 2; }
    cmd_node "${1#node-}" "$2"
    ;;
  node-add)
    (($# == 1)) || { usage >&2; exit 2; }
    cmd_node_add
    ;;
  -h | --help | help)
    usage
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac
