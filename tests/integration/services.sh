# services.sh -- real services for integration tests, on loopback only.
# Source it, then:
#   start_postgres   -> exports PG_URL (postgresql://postgres@127.0.0.1:PORT/postgres)
#   stop_postgres
#   start_redis      -> exports REDIS_URL (redis://127.0.0.1:PORT)
#   stop_redis
#   start_mosquitto  -> exports MQTT_URL (mqtt://127.0.0.1:PORT)
#   stop_mosquitto
#   install_pg_extension DIR
# Each start_* returns non-zero (with a message on stderr) when the service
# cannot be started; callers decide whether that fails or skips the test.
# A caller that skips a part goes through skip_or_fail (below) and ends with
# `exit_status FAILURES`: under INFERA_REQUIRE_SERVICES=1 (.ci/run sets it:
# CI installs Redis, PostgreSQL, mosquitto and the en_US locale) the missing
# piece is a failure; elsewhere the test exits 77, which ctest records as
# skipped (SKIP_RETURN_CODE), never as passed.
# Servers run from throwaway directories removed by stop_*.  PostgreSQL
# refuses to run as root, so as root the cluster runs as the `postgres` user.

PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}

# A free TCP port on 127.0.0.1.
# A port nobody answers on (random, probed with bash's /dev/tcp).
free_port() {
    local p
    for _ in $(seq 50); do
        p=$(( 20000 + RANDOM % 30000 ))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

_pg_run() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_postgres() {
    if [ ! -x "$PG_BIN/initdb" ]; then
        echo "services.sh: PostgreSQL binaries not found in $PG_BIN" >&2
        return 1
    fi
    PG_DIR=$(mktemp -d /tmp/infera-pg.XXXXXX)
    chmod 755 "$PG_DIR"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$PG_DIR"
    if ! _pg_run "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust --no-sync >"$PG_DIR/initdb.log" 2>&1; then
        echo "services.sh: initdb failed: $(tail -n 3 "$PG_DIR/initdb.log")" >&2
        return 1
    fi
    local attempt
    for attempt in 1 2 3; do # a fresh port each time: another process may have taken the one probed
        PG_PORT=$(free_port)
        _pg_run "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
            -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR -c fsync=off" start >/dev/null 2>&1 && break
        if [ "$attempt" = 3 ]; then
            echo "services.sh: PostgreSQL did not start: $(tail -n 3 "$PG_DIR/server.log" 2>/dev/null)" >&2
            return 1
        fi
    done
    export PG_DIR PG_PORT
    export PG_URL="postgresql://postgres@127.0.0.1:$PG_PORT/postgres"
}

stop_postgres() {
    [ -n "${PG_DIR:-}" ] || return 0
    _pg_run "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1
    rm -rf "$PG_DIR"
    unset PG_DIR PG_URL PG_PORT
}

# install_pg_extension DIR: installs the infera extension built in DIR
# (infera.so, infera.control, infera--0.1.sql) into this PostgreSQL's library
# and extension directories (needs root).  Each file is copied under a
# temporary name and renamed into place, so tests that install it in parallel
# never see (or let a running server map) a half-written file.
install_pg_extension() {
    local dir=$1 libdir sharedir f src dst mode
    libdir=$(pg_config --pkglibdir) && sharedir=$(pg_config --sharedir)/extension || return 1
    for f in "$dir/infera.so:$libdir:755" "$dir/infera.control:$sharedir:644" "$dir/infera--0.1.sql:$sharedir:644"; do
        IFS=: read -r src dst mode <<<"$f"
        install -m "$mode" "$src" "$dst/.$(basename "$src").$$" 2>/dev/null &&
            mv -f "$dst/.$(basename "$src").$$" "$dst/$(basename "$src")" 2>/dev/null || {
            rm -f "$dst/.$(basename "$src").$$"
            return 1
        }
    done
}

# A fresh database in the running cluster; prints its URL.
pg_create_db() {
    local name=$1
    psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "CREATE DATABASE \"$name\"" >/dev/null || return 1
    echo "postgresql://postgres@127.0.0.1:$PG_PORT/$name"
}

start_redis() {
    if ! command -v redis-server >/dev/null; then
        echo "services.sh: redis-server not installed" >&2
        return 1
    fi
    REDIS_DIR=$(mktemp -d /tmp/infera-redis.XXXXXX)
    local attempt
    for attempt in 1 2 3; do # a fresh port each time: another process may have taken the one probed
        REDIS_PORT=$(free_port)
        redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$REDIS_DIR" --save '' --appendonly no \
            --daemonize yes --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" >/dev/null 2>&1
        for _ in $(seq 50); do
            if [ "$(timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]; then
                export REDIS_DIR REDIS_PORT
                export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
                return 0
            fi
            sleep 0.1
        done
        [ -f "$REDIS_DIR/redis.pid" ] && kill "$(cat "$REDIS_DIR/redis.pid")" 2>/dev/null
    done
    echo "services.sh: redis-server did not start: $(tail -n 3 "$REDIS_DIR/redis.log" 2>/dev/null)" >&2
    rm -rf "$REDIS_DIR"
    unset REDIS_DIR REDIS_PORT
    return 1
}

stop_redis() {
    [ -n "${REDIS_DIR:-}" ] || return 0
    [ -f "$REDIS_DIR/redis.pid" ] && kill "$(cat "$REDIS_DIR/redis.pid")" 2>/dev/null
    rm -rf "$REDIS_DIR"
    unset REDIS_DIR REDIS_URL REDIS_PORT
}

# An MQTT broker (Debian mosquitto) on loopback, in memory: sessions of
# persistent clients (clean_session false) and their queued QoS 1 messages
# live as long as the broker; no limit on queued messages.
start_mosquitto() {
    local bin attempt
    bin=$(command -v mosquitto || echo /usr/sbin/mosquitto)
    if [ ! -x "$bin" ]; then
        echo "services.sh: mosquitto not installed" >&2
        return 1
    fi
    MQTT_DIR=$(mktemp -d /tmp/infera-mqtt.XXXXXX)
    chmod 777 "$MQTT_DIR" # the broker drops root privileges to user mosquitto
    for attempt in 1 2 3; do # a fresh port each time: another process may have taken the one probed
        MQTT_PORT=$(free_port)
        printf '%s\n' "listener $MQTT_PORT 127.0.0.1" "allow_anonymous true" "persistence false" \
            "max_queued_messages 0" "log_dest file $MQTT_DIR/mosquitto.log" "pid_file $MQTT_DIR/mosquitto.pid" \
            >"$MQTT_DIR/mosquitto.conf"
        "$bin" -c "$MQTT_DIR/mosquitto.conf" -d >/dev/null 2>&1
        for _ in $(seq 100); do
            if (exec 3<>"/dev/tcp/127.0.0.1/$MQTT_PORT") 2>/dev/null; then
                export MQTT_DIR MQTT_PORT
                export MQTT_URL="mqtt://127.0.0.1:$MQTT_PORT"
                return 0
            fi
            sleep 0.1
        done
        [ -f "$MQTT_DIR/mosquitto.pid" ] && kill "$(cat "$MQTT_DIR/mosquitto.pid")" 2>/dev/null
    done
    echo "services.sh: mosquitto did not start: $(tail -n 3 "$MQTT_DIR/mosquitto.log" 2>/dev/null)" >&2
    rm -rf "$MQTT_DIR"
    unset MQTT_DIR MQTT_PORT
    return 1
}

stop_mosquitto() {
    [ -n "${MQTT_DIR:-}" ] || return 0
    [ -f "$MQTT_DIR/mosquitto.pid" ] && kill "$(cat "$MQTT_DIR/mosquitto.pid")" 2>/dev/null
    rm -rf "$MQTT_DIR"
    unset MQTT_DIR MQTT_URL MQTT_PORT
}

# skip_or_fail WHAT: a part of the test cannot run because WHAT is missing.
# Prints "SKIP WHAT" and counts it in SKIPPED_PARTS (returns 0), or, under
# INFERA_REQUIRE_SERVICES=1, prints "FAIL WHAT" and returns 1: the caller
# counts a failure.
skip_or_fail() {
    if [ "${INFERA_REQUIRE_SERVICES:-0}" = 1 ]; then
        echo "FAIL $1 (INFERA_REQUIRE_SERVICES=1: CI installs it, so it must be there)"
        return 1
    fi
    echo "SKIP $1"
    SKIPPED_PARTS=$((${SKIPPED_PARTS:-0} + 1))
    return 0
}

# exit_status FAILURES: exits 1 when FAILURES > 0, else 77 (ctest's skip code)
# when a part was skipped, else 0.
exit_status() {
    [ "$1" -eq 0 ] || exit 1
    [ "${SKIPPED_PARTS:-0}" -eq 0 ] || exit 77
    exit 0
}
