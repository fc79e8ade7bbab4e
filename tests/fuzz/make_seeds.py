#!/usr/bin/env python3
"""Writes the seed corpus in tests/fuzz/corpus/ (checked in; rerun to refresh).

    python3 tests/fuzz/make_seeds.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def varint(v):
    out = b""
    v &= (1 << 64) - 1
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def tag(field, wire):
    return varint(field << 3 | wire)


def ld(field, data):
    return tag(field, 2) + varint(len(data)) + data


def duration(seconds, nanos):
    return tag(1, 0) + varint(seconds) + tag(2, 0) + varint(nanos)


def any_(type_url, value):
    return ld(1, type_url.encode()) + ld(2, value)


RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def status(*details, code=14, message=b"unavailable"):
    out = tag(1, 0) + varint(code) + ld(2, message)
    for d in details:
        out += ld(3, d)
    return out


def write(corpus, name, data):
    d = os.path.join(HERE, "corpus", corpus)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# grpc-retry-pushback-ms values.
for i, v in enumerate([b"250", b"0", b"-1", b" 12 ", b"\t7\n", b"",
                       b"999999999999999999", b"9999999999999999999",
                       b"1e3", b"+5", b"0x10", b"12ms", b"\xff\xfe",
                       b"00000000000000000000001", b"3 4"]):
    write("pushback", "seed%02d" % i, v)

# grpc-status-details-bin; first byte is the fuzzer's mode (0 = raw).
ri = ld(1, duration(2, 500000000))
seeds = {
    "retry_info": b"\x00" + status(any_(RETRY_INFO, ri)),
    "retry_info_after_other": b"\x00" + status(any_("type.googleapis.com/x.Y", b"zz"), any_(RETRY_INFO, ri)),
    "negative_delay": b"\x00" + status(any_(RETRY_INFO, ld(1, duration(-1, 0)))),
    "huge_seconds": b"\x00" + status(any_(RETRY_INFO, ld(1, duration(315576000001, 0)))),
    "max_seconds": b"\x00" + status(any_(RETRY_INFO, ld(1, duration(315576000000, 999999999)))),
    "bad_nanos": b"\x00" + status(any_(RETRY_INFO, ld(1, duration(1, 1000000000)))),
    "truncated": b"\x00" + status(any_(RETRY_INFO, ri))[:-3],
    "group_wire_type": b"\x00" + tag(3, 3) + b"\x00",
    "overlong_varint": b"\x00" + b"\x08" + b"\xff" * 11,
    "length_past_end": b"\x00" + tag(3, 2) + varint(1 << 40),
    "empty_retry_info": b"\x00" + status(any_(RETRY_INFO, b"")),
    "no_details": b"\x00" + status(),
    "mode1_duration": b"\x01" + ri,
    "mode2_duration": b"\x02" + duration(1, 5),
    "mode3_other": b"\x03" + b"\x08\x01",
    "big_fixed64": b"\x00" + tag(5, 1) + b"\x01" * 8 + tag(6, 5) + b"\x02" * 4,
}
for name, data in seeds.items():
    write("status_details", name, data)


# GetRetrySummary payloads: code byte, u16 message length + message,
# i32 attempts, i64 elapsed, reason byte, then the payload.
def summary_seed(payload, message=b"backend down", attempts=3, elapsed=7100000000, reason=3):
    return (bytes([13]) + struct.pack("<H", len(message)) + message +
            struct.pack("<i", attempts) + struct.pack("<q", elapsed) +
            bytes([reason]) + payload)


for i, p in enumerate([b"3 4 7100000000", b"0 1 0", b"7 0 0", b"8 1 1",
                       b"-1 1 1", b"3 4", b"3 4 5 6", b"a b c", b"",
                       b"3 99999999999 1", b"3 4 -9223372036854775808",
                       b" 3 4 5", b"3  4 5"]):
    write("retry_summary", "seed%02d" % i, summary_seed(p))
write("retry_summary", "min_elapsed",
      summary_seed(b"", attempts=-2147483648, elapsed=-(1 << 63), reason=7))
write("retry_summary", "max_elapsed",
      summary_seed(b"1 1 1", attempts=2147483647, elapsed=(1 << 63) - 1))
write("retry_summary", "server_refused",
      summary_seed(b"stop=server_refused attempts=2 elapsed=0.000000001s",
                   reason=9))


# Options and attempt outcomes (see options_fuzzer.cc for the layout).
def dur(shape, raw):
    return bytes([shape]) + struct.pack("<q", raw)


def options_seed(policy_kind=0, max_failures=3, policy_time=dur(1, 10000),
                 codes=None, initial=dur(1, 100), maximum=dur(1, 5000),
                 multiplier=2.0, jitter=0, fraction=0.2, flags=0,
                 extra=b"", attempts=b""):
    out = bytes([policy_kind, max_failures & 0xFF])
    if not policy_kind & 1:
        out += policy_time
    if policy_kind & 2:
        out += struct.pack("<I", codes)
    out += initial + maximum + struct.pack("<d", multiplier) + bytes([jitter])
    out += struct.pack("<d", fraction) + bytes([flags]) + extra + attempts
    return out


def attempt(code, message=b"m", details_kind=0, details=b"", took=dur(1, 5)):
    out = took + bytes([code]) + struct.pack("<H", len(message)) + message
    out += bytes([details_kind])
    if details_kind == 1:
        out += struct.pack("<H", len(details)) + details
    elif details_kind == 2:
        out += details
    return out


unavail = attempt(14)
write("options", "time_policy_two_failures", options_seed(attempts=unavail * 2 + attempt(0)))
write("options", "count_policy_exhausted", options_seed(policy_kind=1, max_failures=2, attempts=unavail * 5))
write("options", "non_idempotent", options_seed(flags=32, attempts=unavail * 3))
write("options", "permanent", options_seed(attempts=attempt(3)))
write("options", "codes_with_ok", options_seed(policy_kind=2, codes=0x1 | 1 << 14, attempts=unavail))
write("options", "codes_out_of_range", options_seed(policy_kind=2, codes=1 << 18, attempts=unavail))
write("options", "negative_time", options_seed(policy_time=dur(1, -1000), attempts=unavail))
write("options", "negative_count", options_seed(policy_kind=1, max_failures=-1, attempts=unavail))
write("options", "zero_initial", options_seed(initial=dur(1, 0), attempts=unavail))
write("options", "max_below_initial", options_seed(initial=dur(1, 500), maximum=dur(1, 100), attempts=unavail))
write("options", "nan_multiplier", options_seed(multiplier=float("nan"), attempts=unavail))
write("options", "inf_multiplier", options_seed(multiplier=float("inf"), attempts=unavail))
write("options", "bad_fraction", options_seed(jitter=2, fraction=1.5, attempts=unavail))
write("options", "huge_maximum", options_seed(policy_kind=1, max_failures=100, initial=dur(0, 1000000000), maximum=dur(0, (1 << 63) - 1), multiplier=10.0, jitter=3, attempts=unavail * 80))
write("options", "negative_attempt_timeout", options_seed(flags=4, extra=dur(1, -5), attempts=unavail))
write("options", "attempt_timeout_deadline", options_seed(flags=4, extra=dur(1, 20), attempts=attempt(4, took=dur(1, 25)) * 3 + attempt(0)))
write("options", "total_timeout", options_seed(flags=8, extra=dur(1, 300), attempts=unavail * 20))
write("options", "bad_throttle", options_seed(flags=16, extra=struct.pack("<dd", 0.0, 0.1), attempts=unavail))
write("options", "throttle", options_seed(flags=16, extra=struct.pack("<dd", 2.0, 0.5), attempts=unavail * 5))
write("options", "retry_info_hint", options_seed(attempts=attempt(14, details_kind=2, details=struct.pack("<II", 1, 5)) + attempt(0)))
write("options", "garbage_details", options_seed(attempts=attempt(14, details_kind=1, details=b"\x1a\xff\xff") + attempt(0)))
write("options", "hints_off", options_seed(flags=64, attempts=attempt(14, details_kind=2, details=struct.pack("<II", 99, 0)) + attempt(0)))
write("options", "full_jitter_zero_wait", options_seed(jitter=1, attempts=unavail * 10 + attempt(0)))

# service_config: JSON text, valid configs and one of each bad-input kind.
RETRY = ('"retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.100s", '
         '"maxBackoff": "10s", "backoffMultiplier": 1.5, '
         '"retryableStatusCodes": ["UNAVAILABLE", 8]}')


def config_seed(name, text):
    write("service_config", name, text.encode())


def entry(fields, names='[{}]'):
    return '{"name": %s, %s}' % (names, fields)


def method_config(*entries, extra=""):
    return '{"methodConfig": [%s]%s}' % (", ".join(entries), extra)


config_seed("empty", "{}")
config_seed("default_retry", method_config(entry(RETRY + ', "timeout": "30s", "waitForReady": true')))
config_seed("layered", method_config(
    entry('"timeout": "100s"'),
    entry(RETRY, '[{"service": "a.B"}]'),
    entry('"waitForReady": false', '[{"service": "a.B", "method": "C"}]'),
    entry('"timeout": "1s"', '[{"service": "a.B", "method": "D"}, {"service": "x.Y"}]')))
config_seed("googleapis_no_max_attempts", method_config(entry(
    '"timeout": "60s", "retryPolicy": {"initialBackoff": "0.100s", '
    '"maxBackoff": "60s", "backoffMultiplier": 1.3, '
    '"retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}',
    '[{"service": "google.pubsub.v1.Publisher", "method": "Publish"}]')))
config_seed("hedging", method_config(entry(
    '"hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.050s", '
    '"nonFatalStatusCodes": ["UNAVAILABLE", 10]}')))
config_seed("throttle", method_config(entry(RETRY),
                                      extra=', "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}'))
config_seed("ignored_fields", '{"loadBalancingConfig": [{"round_robin": {}}], '
            '"methodConfig": [{"name": [{}], "maxRequestMessageBytes": "1024", '
            '"newerField": {"a": [1, 2]}}]}')
# Issue 39: what gRPC 1.51 accepts and stubkit reads as gRPC does, with
# warnings; and a duplicate key where stubkit reads nothing.
config_seed("grpc_forms", method_config(
    entry('"timeout": "1 s", "retryPolicy": {"maxAttempts": 3, '
          '"initialBackoff": "0.0015s", "maxBackoff": "10000000000s", '
          '"backoffMultiplier": 1e400, "retryableStatusCodes": ["OK", "UNAVAILABLE"]}, '
          '"hedgingPolicy": {"maxAttempts": 2}'),
    '{"timeout": "100000000000s"}',
    extra=', "retryThrottling": {"maxTokens": 5000, "tokenRatio": 6000}'))
config_seed("snake_case", '{"method_config": [{"name": [{"service": "a.B"}], '
            '"retry_policy": {"max_attempts": 3}}]}')
config_seed("duplicate_unread_key", '{"loadBalancingConfig": [{"a": 1, "a": 2}]}')
config_seed("bad_json", '{"methodConfig": [')
config_seed("bad_type", method_config(entry('"retryPolicy": {"maxAttempts": "abc"}')))
config_seed("bad_code", method_config(entry(RETRY.replace('8]', '"TRANSIENT"]'))))
config_seed("bad_duration", method_config(entry('"timeout": "-1s"')))
config_seed("malformed_duration", method_config(entry('"timeout": "1.5"')))
config_seed("bad_multiplier", method_config(entry(RETRY.replace('1.5', '0.5'))))
config_seed("max_below_initial", method_config(entry(RETRY.replace('"10s"', '"0.050s"'))))
config_seed("duplicate_name", method_config(entry('"timeout": "1s"'), entry('"timeout": "2s"')))
config_seed("retry_and_hedging", method_config(entry(RETRY + ', "hedgingPolicy": {"maxAttempts": 2}')))
config_seed("empty_name", method_config('{"name": []}'))
config_seed("bad_throttle", '{"retryThrottling": {"maxTokens": 0, "tokenRatio": 0.1}}')
config_seed("duplicate_key", '{"retryThrottling": {"maxTokens": 5, "tokenRatio": 0., "tokenRatio": 0.}}')
