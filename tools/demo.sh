#!/usr/bin/env bash
# make demo's processes: the telemetry simulator, a Celery worker with beat and the web server, run together and
# stopped together by Ctrl-C (SIGINT), SIGTERM or SIGHUP within about 5 s; when one of them exits, so do the others.
# Usage: tools/demo.sh PORT SIM_PORT, in the demo's environment (the Makefile's DEMO_ENV).
#
# Each process runs in a process group of its own (setsid), so one kill stops a process with its children (the
# runserver's autoreloader child, Celery's pool and beat): a background job of a script ignores Ctrl-C's SIGINT, and
# the former `trap 'kill 0' ...` signalled this shell too, re-entering its own trap until the shell overflowed its
# stack (make's "Segmentation fault").
set -u
port=$1
sim_port=$2
bin=${BIN:-.venv/bin}
groups=()

start() {
    setsid "$@" &
    groups+=("$!")
}

alive() {
    local group
    for group in "${groups[@]}"; do
        kill -0 -- "-$group" 2>/dev/null && return 0
    done
    return 1
}

# Waits up to $1 tenths of a second for every group to be gone.
wait_gone() {
    local tenths=$1
    while alive && ((tenths-- > 0)); do
        sleep 0.1
    done
}

stop() {
    local signal=$1 status=$2
    trap '' INT TERM HUP  # a second Ctrl-C must not cut the shutdown short
    trap - EXIT
    # The worker's main process alone gets TERM (a warm shutdown: its pool stops after the task in hand); the web
    # server and the simulator stop at once. On the filesystem broker a worker notices TERM only at its next poll
    # and stops its pool in a few seconds more: what is left after 3.5 s is killed (the periodic tasks run again
    # at their next beat).
    kill -TERM -- "-$web" "-$simulator" "$worker" 2>/dev/null
    wait_gone 35
    alive && kill -KILL -- "${groups[@]/#/-}" 2>/dev/null
    wait 2>/dev/null  # without bash's "Killed" line for each
    if [ -n "$signal" ]; then
        trap - "$signal"
        kill "-$signal" $$  # dies of the signal, as a caller (make, a shell) expects of Ctrl-C
    fi
    exit "$status"
}

start "$bin/python" manage.py simulate_telemetry --port "$sim_port"
simulator=$!
start "$bin/celery" -A portal --quiet worker --beat --loglevel=WARNING --concurrency=2  # --quiet: no banner
worker=$!
start "$bin/python" manage.py runserver "127.0.0.1:$port"
web=$!

trap 'stop INT 130' INT
trap 'stop TERM 143' TERM
trap 'stop HUP 129' HUP
trap 'stop "" 1' EXIT
# Until one of them exits (a port already in use, say) or a signal comes.
wait -n
stop "" $?
