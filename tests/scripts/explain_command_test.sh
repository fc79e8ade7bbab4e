#!/usr/bin/env bash
# stubkit-explain, run as a user would: a service config, flags, an SVG,
# --why-not, --help, and bad input (exit 2 with a message on stderr).
#
#   tests/scripts/explain_command_test.sh <stubkit-explain> <source dir>
set -uo pipefail
tool="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect <exit code> <text on stdout or stderr> -- <args...>
expect() {
  local code="$1" text="$2"
  shift 3
  "${tool}" "$@" >"${work}/out" 2>"${work}/err"
  local got=$?
  if [[ "${got}" != "${code}" ]]; then
    fail "stubkit-explain $* exited ${got}, not ${code}: $(cat "${work}/err")"
  elif ! grep -qF -- "${text}" "${work}/out" "${work}/err"; then
    fail "stubkit-explain $* did not print '${text}': $(cat "${work}/out" "${work}/err")"
  fi
}

expect 0 "usage: stubkit-explain" -- --help
expect 0 "retry policy exhausted (at most 4 retries)" -- \
  --service-config="${src}/examples/demo_service_config.json" \
  --method=demo.KeyValue/Get --attempt-duration=20ms
expect 0 "backoff: ExponentialBackoffPolicy(100ms, 2s, 1.5, jitter: full)" -- \
  --service-config="${src}/examples/demo_service_config.json" \
  --method=demo.KeyValue.Get
# Flags layer over the file, as a call's options over a client's.
expect 0 "ExponentialBackoffPolicy(100ms, 2s, 1.5, jitter: none)" -- \
  --service-config="${src}/examples/demo_service_config.json" \
  --method=demo.KeyValue.Get --jitter=none
expect 0 "attempts: 21 on every draw" -- \
  --time-limit=10min --initial-backoff=200ms --max-backoff=45s \
  --attempt-duration=100ms
expect 0 "stops at 1.2s (deadline)" -- \
  --max-attempts=10 --initial-backoff=100ms --jitter=none \
  --attempt-timeout=300ms --total-timeout=1.2s --attempt-duration=1h
expect 0 "idempotent: no" -- --non-idempotent
expect 0 "attempts: 4 on every draw" -- --max-attempts=4 --svg="${work}/chart.svg"
if ! grep -q "^<svg" "${work}/chart.svg" || ! grep -q "</svg>" "${work}/chart.svg"; then
  fail "--svg wrote no SVG"
fi
expect 0 "to change it: a larger RetryPolicy::LimitedErrorCount" -- \
  "--why-not=UNAVAILABLE: down [stubkit: gave up: retry policy exhausted (at most 3 retries); 4 attempts over 7.1s]"
echo "backend down [stubkit: not retried: demo.KeyValue.Put is not idempotent; 1 attempt over 3ms]" \
  >"${work}/status.txt"
"${tool}" --why-not=- <"${work}/status.txt" >"${work}/out" 2>&1 ||
  fail "--why-not=- exited $?"
grep -q "IdempotencyOption" "${work}/out" || fail "--why-not=- said: $(cat "${work}/out")"

# Issue 39, item 13: a file without an entry for --method (a typo in the
# method or the service, or snake_case keys) is refused with the closest
# name, and the idempotency a file cannot say is not claimed.
cat >"${work}/methods.json" <<'EOF'
{"methodConfig": [{
  "name": [{"service": "demo.KeyValue", "method": "Get"},
           {"service": "demo.KeyValue", "method": "Put"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s",
    "maxBackoff": "1s", "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"]}}]}
EOF
sed 's/methodConfig/method_config/' "${work}/methods.json" >"${work}/snake.json"
expect 2 "Did you mean demo.KeyValue/Get?" -- \
  --service-config="${work}/methods.json" --method=demo.KeyValue/Gte
expect 2 "Did you mean demo.KeyValue/Put?" -- \
  --service-config="${work}/methods.json" --method=demo.KeyVlaue.Put
expect 2 "methodConfig" -- \
  --service-config="${work}/snake.json" --method=demo.KeyValue/Get
expect 0 "idempotent: unknown, assumed yes (pass --idempotent or --non-idempotent" -- \
  --max-attempts=3
# The file's retryPolicy retries the method whatever its proto says, as
# gRPC does (ServiceConfigImport::keep_idempotency_rules aside).
expect 0 "idempotent: yes" -- \
  --service-config="${work}/methods.json" --method=demo.KeyValue/Get
# --non-idempotent is the proto's word, and the file's retryPolicy still
# retries the method, as the running client does (a new user's trial found
# the tool saying "not retried" where the client retried).
expect 0 "idempotent: yes" -- --non-idempotent \
  --service-config="${work}/methods.json" --method=demo.KeyValue/Get
expect 0 "attempts: 3 on every draw" -- --non-idempotent --jitter=none \
  --service-config="${work}/methods.json" --method=demo.KeyValue/Get
expect 0 "idempotent: no (--non-idempotent: the proto's idempotency_level)" \
  -- --non-idempotent --max-attempts=3
expect 0 "idempotent: yes (--idempotent" -- --idempotent --max-attempts=3
if "${tool}" --max-attempts=3 | grep -q "idempotent: yes"; then
  fail "flags alone claimed the method is idempotent"
fi

# Issue 39, item 5: an uncapped backoff saturates instead of wrapping.
expect 0 "worst case: a failing call takes up to >292y" -- \
  --method=demo.KeyValue.Get --max-attempts=7 --initial-backoff=1s \
  --max-backoff=inf --multiplier=1000 --jitter=none
if "${tool}" --method=demo.KeyValue.Get --max-attempts=7 --initial-backoff=1s \
    --max-backoff=inf --multiplier=1000 --jitter=none | grep -q -- " -[0-9]"; then
  fail "an uncapped backoff printed a negative time"
fi

# Issue 43: --load, attempts per call offered by failure fraction, from
# flags and from a service config (whose retryThrottling it reads).
expect 0 "failing  steady" -- --load --max-attempts=5
expect 0 "    100%    5.000  (maxAttempts (5))" -- --load --max-attempts=5
expect 0 "     50%    1.938  (maxAttempts (5))" -- --load --max-attempts=5
expect 0 "cut-off at 9.091% of attempts failing" -- --load \
  --service-config="${src}/examples/demo_service_config.json" \
  --method=demo.KeyValue/Get
expect 0 "     10%    1.000  (throttle: above its cut-off 9.091%)" -- --load \
  --service-config="${src}/examples/demo_service_config.json" \
  --method=demo.KeyValue/Get
expect 0 "    100%    1.300  (retry budget" -- --load --max-attempts=5 \
  --budget=0.2:10 --rate=100
expect 0 "     25%" -- --load --failing=25,75
# The header says what the flags said, as the schedule's does.
expect 0 "idempotent: no (--non-idempotent" -- --load --non-idempotent
expect 0 "idempotent: yes (--idempotent" -- --load --idempotent
expect 0 "      0%    3.000  (hedging: 3 attempts, 50ms apart)" -- --load \
  --hedging=3:50ms --attempt-duration=120ms
# Issue 43, item 2: layers, the SRE book's three layers of four attempts.
expect 0 "    100%        64.000        19.000                 4.000" -- \
  --layers=3 --max-attempts=4
expect 0 "IncomingCall+Reply" -- --layers=2 \
  --service-config="${src}/examples/demo_service_config.json" \
  --method=demo.KeyValue/Get
expect 2 "is not a whole number of layers in [1, 100]" -- --layers=0
expect 2 "is not a whole number of layers in [1, 100]" -- --layers=x
# The retry storm study's default-jitter variant, measured 4.38x.
expect 0 "outage 40s    4.387  (time limit (14 attempts))" -- --load \
  --time-limit=30min --initial-backoff=1s --max-backoff=300s --rate=40 \
  --clients=20 --outage=40s --failing=100
expect 0 "    100%" -- --load --max-attempts=4 --svg="${work}/load.svg"
expect 0 "IncomingCall+Reply" -- --layers=2 --max-attempts=4 \
  --svg="${work}/layers.svg"
for chart in load layers; do
  if ! grep -q "^<svg" "${work}/${chart}.svg" ||
      ! grep -q "<polyline" "${work}/${chart}.svg"; then
    fail "--svg with --${chart} wrote no chart"
  fi
done
expect 1 "could not write" -- --load --svg="${work}/no-such-dir/load.svg"
expect 2 "is not a whole number of clients >= 1" -- --load --clients=0
expect 2 "is not a duration" -- --load --outage=soon
expect 2 "an outage must last more than 0" -- --load --outage=0s
expect 2 "is not a positive number of calls per second" -- --load --rate=-1
expect 2 "is not a list of percentages in [0, 100]" -- --load --failing=120
expect 2 "is not a list of percentages" -- --load --failing=
expect 2 "is not TOKENS:RATIO" -- --load --throttle=10
expect 2 "max_tokens must be in (0, 1000]" -- --load --throttle=0:1
expect 2 "is not FRACTION:PER_SECOND[:TTL]" -- --load --budget=0.2
expect 2 "is not ATTEMPTS:DELAY" -- --load --hedging=2.5:1s
expect 2 "Did you mean demo.KeyValue/Get?" -- --load \
  --service-config="${work}/methods.json" --method=demo.KeyValue/Gte

# A new user's trial of --load: flags that only --load reads are refused
# without it, and those --layers does not read are refused with it.
expect 2 "--rate applies to --load only" -- --rate=10
expect 2 "--failing applies to --load or --layers only" -- --failing=10
expect 2 "--outage applies to --load only" -- --outage=10s
expect 2 "--clients applies to --load only" -- --clients=3
expect 2 "--rate is not read with --layers" -- --layers=2 --rate=10
expect 2 "--outage is not read with --layers" -- --layers=2 --outage=10s
# --load named as well: the message must not say "applies to --load only".
expect 2 "--rate is not read with --layers, which reads only --failing" \
  -- --load --layers=2 --rate=10
expect 0 "     10%" -- --layers=2 --failing=10
# --layers' header spells the method as --load does, and shows the bucket.
expect 0 "method: demo.KeyValue.Get" -- --layers=2 \
  --service-config="${src}/examples/demo_service_config.json" \
  --method=demo.KeyValue/Get
expect 0 "retry throttle: 100 tokens, 0.1 back per success" -- --layers=2 \
  --service-config="${src}/examples/demo_service_config.json" \
  --method=demo.KeyValue/Get
# "could not write" says why.
expect 1 "could not write ${work}/no-such-dir/load.svg: No such file or directory" \
  -- --load --svg="${work}/no-such-dir/load.svg"
expect 1 "could not write ${work}/no-such-dir/chart.svg: No such file or directory" \
  -- --svg="${work}/no-such-dir/chart.svg"
# The outage row's numbers stand under the other rows'.
"${tool}" --load --max-attempts=5 --outage=30s --failing=0,100 >"${work}/out" 2>&1
row="$(grep -E '^ +100%' "${work}/out")"
outage="$(grep -E '^ *outage' "${work}/out")"
row_lead="${row%%(*}"
outage_lead="${outage%%(*}"
if [[ -z "${row}" || -z "${outage}" || "${#row_lead}" -ne "${#outage_lead}" ]]; then
  fail "the outage row is not aligned: $(cat "${work}/out")"
fi

# Bad input: exit 2, and a message that names the problem.
expect 2 "unknown flag --bogus" -- --bogus=1
expect 2 "unknown argument" -- stray
expect 2 "is not a duration" -- --time-limit=soon
expect 2 "is not a whole number" -- --max-attempts=0
expect 2 "is not a status code" -- --failure=SOMETIMES
expect 2 "jitter" -- --jitter=wobbly
expect 2 "needs --method" -- --service-config="${src}/examples/demo_service_config.json"
expect 2 "must not be negative" -- \
  --service-config="${src}/examples/testdata/bad_service_config.json" \
  --method=demo.KeyValue/Get
expect 2 "no-such-file.json" -- --service-config="${work}/no-such-file.json" \
  --method=demo.KeyValue/Get
expect 2 "is not a method name" -- --method=NoService
expect 2 "multiplier" -- --multiplier=-1
expect 2 "no stubkit summary" -- "--why-not=just an error"
expect 1 "could not write" -- --svg="${work}/no-such-dir/chart.svg"

if [[ "${failures}" -ne 0 ]]; then
  echo "${failures} check(s) failed" >&2
  exit 1
fi
echo "stubkit-explain: all checks passed"
