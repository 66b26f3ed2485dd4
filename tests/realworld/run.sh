#!/usr/bin/env bash
# Loads public example files no one here wrote (vega-datasets, BSD-3-Clause,
# pinned by package-lock.json and installed by scripts/test) through the
# `loam` command line: each is refused without the coercion its shape needs,
# with a clear error and the table unchanged, then loaded with it.
#   stocks.csv        dates like "Jan 1 2000"            patternToDate
#   github.csv        timestamps like "2015/01/01 01:00:00" patternToTimestamp
#   unemployment.tsv  rates like ".097"                   fractions without a leading zero
set -euo pipefail
loam=$1
data=$2/tests/realworld/node_modules/vega-datasets/data
[ -f "$data/stocks.csv" ] || { echo "missing $data: run npm ci in tests/realworld (scripts/test does)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export LOAM_PRINCIPAL=owner
fail() { echo "FAIL: $*"; exit 1; }
# The data lines of a file (every line but the header; a last line may lack its newline).
lines() { echo $(($(grep -c '' "$1") - 1)); }
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"; }
# A load that must fail: its exit code, and its message must contain $2.
refused() {
  local table=$1 want=$2; shift 2
  local out code=0
  out=$("$loam" load "$table" "$@" 2>&1) || code=$?
  [ "$code" -ne 0 ] || fail "load $table $* succeeded"
  grep -qF -- "$want" <<<"$out" || fail "load $table: no '$want' in: $out"
  echo "refused as expected: $(grep -F -- "$want" <<<"$out" | head -1)"
  expect_eq "$("$loam" count "$table")" 0 "$table after the refused load"
}

"$loam" init >/dev/null
"$loam" table create stocks --column symbol:string:not-null --column date:date:not-null \
  --column price:decimal\(10,2\) --key symbol --key date >/dev/null
"$loam" table create github --column time:timestamp:not-null --column count:int64 --key time >/dev/null
"$loam" table create unemployment --column id:int64:not-null --column rate:decimal\(4,3\) \
  --key id >/dev/null

refused stocks "YYYY-MM-DD" "$data/stocks.csv"
"$loam" load stocks "$data/stocks.csv" --coerce 'date:patternToDate:%b %e %Y' >/dev/null
expect_eq "$("$loam" count stocks)" "$(lines "$data/stocks.csv")" "stocks rows"
expect_eq "$("$loam" scan stocks --where 'date = 2000-01-01' --format csv | grep '^MSFT,')" \
  "MSFT,2000-01-01,39.81" "the first stock price"

refused github "YYYY-MM-DDTHH:MM:SS" "$data/github.csv"
refused github "state the zone" "$data/github.csv" --coerce 'time:patternToTimestamp:%Y/%m/%d %H:%M:%S'
"$loam" load github "$data/github.csv" --coerce 'time:patternToTimestamp:%Y/%m/%d %H:%M:%S@UTC' \
  >/dev/null
expect_eq "$("$loam" count github)" "$(lines "$data/github.csv")" "github rows"
expect_eq "$("$loam" scan github --where 'time = 2015-01-01T01:00:00Z' --format csv | tail -1)" \
  "2015-01-01T01:00:00Z,2" "the first github count"

"$loam" load unemployment "$data/unemployment.tsv" --delimiter $'\t' >/dev/null
expect_eq "$("$loam" count unemployment)" "$(lines "$data/unemployment.tsv")" "unemployment rows"
expect_eq "$("$loam" scan unemployment --where 'id = 1001' --format csv | tail -1)" "1001,0.097" \
  "the first rate"
expect_eq "$("$loam" scan unemployment --where 'id = 1061' --format csv | tail -1)" "1061,0.100" \
  "a rate of .1"
echo "every real-world file loaded"
