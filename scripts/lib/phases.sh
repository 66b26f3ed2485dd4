# Sourced by scripts/test and .ci/run: times the phases of a build and test
# run. When LOAM_PHASE_LOG names a file, each phase appends one line to it:
# "<seconds> <name>", so a caller running several scripts can print them all.

# phase NAME COMMAND...: runs COMMAND, records how long it took (also when it
# fails), and returns its exit status.
phase() {
  local name="$1" start=$SECONDS status=0
  shift
  "$@" || status=$?
  if [ -n "${LOAM_PHASE_LOG:-}" ]; then
    echo "$((SECONDS - start)) $name" >>"$LOAM_PHASE_LOG"
  fi
  return "$status"
}

# print_phases FILE: the recorded phases as aligned lines, then their total.
print_phases() {
  [ -s "$1" ] || return 0
  awk '{ s = $1; $1 = ""; sub(/^ /, ""); total += s
         printf "phase %-34s %5d s  (%dm%02ds)\n", $0, s, s / 60, s % 60 }
       END { printf "phase %-34s %5d s  (%dm%02ds)\n", "total", total, total / 60, total % 60 }' "$1"
}
