#!/usr/bin/env bash
# Runs the documentation's examples as a reader would: every ```sh block of
# each docs/*.md file, in order, in one shell per file (a block may use what
# an earlier one set), against the loam binary given. A command that fails,
# or a curl answered 4xx/5xx, fails the test. Every ```json block must be
# valid JSON, and the pipeline example of docs/service.md is created as
# written. The one change made to a block: the example port 8080 becomes a
# free one, so tests running side by side do not collide.
#
#   tests/docs/run_examples.sh LOAM_BINARY SOURCE_DIR
set -euo pipefail

loam_binary=$(realpath "$1")
source_dir=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
ln -s "$loam_binary" "$work/bin/loam"

# A port below the kernel's ephemeral range (ip_local_port_range, 32768 up by
# default): servers of other tests listen on port 0 and every client socket
# takes an ephemeral port, so a port from that range that was free when
# probed could be taken before `loam serve` binds it (seen once).
free_port() {
  local port low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  ((low > 11000)) || low=32768
  while :; do
    port=$((10000 + RANDOM % (low - 10000)))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return; }
  done
}

# The ```LANG blocks of a markdown file, each followed by a line "#--end".
blocks() {
  awk -v lang="$1" '
    /^```/ { if (inside) { inside = 0; if (keep) print "#--end"; next }
             inside = 1; keep = ($0 == "```" lang); next }
    inside && keep { print }' "$2"
}

failures=0
for doc in "$source_dir"/docs/*.md; do
  name=$(basename "$doc")
  json=$(blocks json "$doc")
  if [ -n "$json" ]; then
    n=0
    while IFS= read -r -d $'\x1e' block; do
      n=$((n + 1))
      if ! printf '%s' "$block" | jq -e . >/dev/null; then
        echo "FAIL $name: json example $n is not valid JSON:"; echo "$block"
        failures=$((failures + 1))
      fi
    done < <(printf '%s\n' "$json" | awk '/^#--end$/ { printf "\x1e"; next } { print }')
  fi
  script=$(blocks sh "$doc" | grep -v '^#--end$' || true)
  [ -n "$script" ] || continue
  port=$(free_port)
  dir="$work/$name"
  mkdir -p "$dir"
  # A curl that gets an error status fails (the examples use curl -s).
  {
    echo 'set -euo pipefail'
    echo 'curl() { command curl --fail-with-body "$@"; }'
    echo 'trap '\''kill $(jobs -p) 2>/dev/null || true'\'' EXIT'
    printf '%s\n' "${script//127.0.0.1:8080/127.0.0.1:$port}"
    if [ "$name" = server.md ]; then
      # The walkthrough's last load and its delete end succeeded (three
      # rows, one deleted), and the service example's pipeline is created
      # as written.
      cat <<'CHECK'
state=$(command curl -s -H "$H" "$S/v1/runs/$RUN?wait=60" | jq -r .state)
[ "$state" = succeeded ]
deleted=$(command curl -s -H "$H" "$S/v1/runs/$DEL?wait=60" | jq -r '.state + " " + (.counters.deleted | tostring)')
[ "$deleted" = "succeeded 1" ]
[ "$(command curl -s -H "$H" "$S/v1/tables/orders" | jq .rowCount)" = 2 ]
CHECK
      printf 'curl -s -H "$H" -H "$J" $S/v1/pipelines -d %q >/dev/null\n' \
        "$(blocks json "$source_dir/docs/service.md" | awk '/^#--end$/ { exit } { print }')"
    fi
  } > "$dir/examples.sh"
  echo "== $name"
  if ! (cd "$dir" && PATH="$work/bin:$PATH" LOAM_PRINCIPAL=$(whoami) bash "$dir/examples.sh"); then
    echo "FAIL $name: its sh examples (as run: $dir/examples.sh)"
    cat "$dir/examples.sh"
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] && echo "every example ran" || { echo "$failures failed"; exit 1; }
