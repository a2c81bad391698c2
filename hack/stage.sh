# Progress lines for the shell scripts under hack/, on stderr (so that
# `make bench` keeps only BENCH lines on stdout): a start line with the
# expected duration, "still …" every 20 s while a stage runs, and how long
# it took, so that no stage of `make test`, `make bench` or `make k8s` is
# silent for more than half a minute. The Go tools use hack/progress.
# Source it; it defines functions only.

# ticker_start WHAT: prints "  still WHAT (Ns)" every 20 s until
# ticker_stop, or until the script that started it is gone. Its sleep
# holds none of the script's output: a caller that waits for the output
# to close (Go's exec with WaitDelay) must not wait for a leftover sleep.
ticker_start() {
  local what=$1 began parent=$$
  began=$(date +%s)
  ( exec 3>&2 >/dev/null 2>&1
    while sleep 20 3>&- && kill -0 "$parent"; do
      echo "   still $what ($(( $(date +%s) - began ))s)" >&3
    done ) &
  _ticker=$!
}

ticker_stop() {
  [ -n "${_ticker:-}" ] || return 0
  kill "$_ticker" 2>/dev/null || true
  wait "$_ticker" 2>/dev/null || true
  _ticker=
}

# stage WHAT EXPECT CMD [ARG...]: runs CMD as the stage WHAT; EXPECT says
# how long it usually takes ("" for no estimate). Returns CMD's status.
# Where PODNET_STAGE_RECORD names a file, a line "WHAT<tab>seconds<tab>result"
# is added to it (hack/testlog report reads it).
stage() {
  local what=$1 expect=$2 began rc=0
  shift 2
  began=$(date +%s)
  echo "== $what${expect:+ ($expect)}…" >&2
  ticker_start "$what"
  "$@" || rc=$?
  ticker_stop
  local took=$(( $(date +%s) - began )) result=passed
  if [ "$rc" = 0 ]; then
    echo "== $what: done in ${took}s" >&2
  else
    result="FAILED (exit $rc)"
    echo "== $what: $result after ${took}s" >&2
  fi
  if [ -n "${PODNET_STAGE_RECORD:-}" ]; then
    printf '%s\t%s\t%s\n' "$what" "$took" "$result" >> "$PODNET_STAGE_RECORD"
  fi
  return "$rc"
}
