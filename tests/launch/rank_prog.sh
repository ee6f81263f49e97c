#!/bin/sh
# One rank of a job that test_hvdcrun.py starts through hvdcrun: `rank_prog.sh MODE DIR [ARGS]`.
# Pid files go to DIR as RANK.pid (the rank) and RANK.child.pid (a process the rank started),
# written atomically so that a test never reads half a number.
#   env                  print the launch variables, one NAME=value line each, and a stderr line
#   partial              write lines in pieces, ending without a newline
#   sleep [stubborn]     record pids and sleep; stubborn ranks ignore SIGINT and SIGTERM
#   fail R CODE [stubborn]  rank R exits with CODE once every other rank sleeps (as `sleep`)
#   selfkill R           rank R kills itself with SIGKILL once the others sleep
#   failfirst R CODE     rank R exits with CODE at once; the others print a line 1 s later
set -u
mode=$1
dir=$2

write_pid() {  # write_pid FILE PID
  echo "$2" > "$dir/$1.tmp" && mv "$dir/$1.tmp" "$dir/$1"
}

sleeper() {  # sleeper [stubborn]
  if [ "${1:-}" = stubborn ]; then trap '' INT TERM; fi
  sleep 60 &
  write_pid "$HVDC_RANK.child.pid" $!
  write_pid "$HVDC_RANK.pid" $$
  wait
}

wait_for_others() {  # until every other rank has written its pid file (10 s at most)
  tries=0
  while [ "$(ls "$dir" | grep -c '^[0-9]*\.pid$')" -lt $((HVDC_SIZE - 1)) ] && [ $tries -lt 200 ]; do
    sleep 0.05
    tries=$((tries + 1))
  done
}

case "$mode" in
  env)
    for name in HVDC_RANK HVDC_SIZE HVDC_LOCAL_RANK HVDC_LOCAL_SIZE HVDC_MASTER_ADDR \
        HVDC_MASTER_PORT HVDC_SECRET HVDC_BOOTSTRAP HVDC_TEST_EXTRA; do
      eval "echo $name=\${$name-unset}"
    done
    echo "stderr of rank $HVDC_RANK" >&2
    ;;
  partial)
    printf 'first '
    sleep 0.2
    printf 'line\nsecond'
    sleep 0.2
    printf ' line\nno newline at the end'
    ;;
  sleep)
    sleeper "${3:-}"
    ;;
  fail)
    if [ "$HVDC_RANK" = "$3" ]; then
      wait_for_others
      exit "$4"
    fi
    sleeper "${5:-}"
    ;;
  failfirst)
    [ "$HVDC_RANK" = "$3" ] && exit "$4"
    sleep 1
    echo "rank $HVDC_RANK finished"
    ;;
  selfkill)
    if [ "$HVDC_RANK" = "$3" ]; then
      wait_for_others
      kill -KILL $$
    fi
    sleeper
    ;;
  *)
    echo "rank_prog.sh: unknown mode '$mode'" >&2
    exit 64
    ;;
esac
