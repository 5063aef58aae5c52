#!/bin/bash
# ss.sh PID: one line per thread: comm|tid run wait slices
for t in /proc/$1/task/*; do printf "%s|%s %s\n" "$(cat $t/comm 2>/dev/null | tr ' ' _)" "$(basename $t)" "$(cat $t/schedstat 2>/dev/null)"; done
