// Copyright 2026 The stubkit Authors.
//
// stubkit-explain: prints what stubkit's retry options do to a call that
// keeps failing (stubkit::Explain), from a gRPC service config file or a
// few flags, and why a failed call stopped (stubkit::WhyNot). See --help
// and docs/explain.md.
//
// Exit codes: 0 done; 2 bad input (a flag, the file, the options, text
// without a stubkit summary, a file without an entry for --method); 1 the
// SVG could not be written.

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "stubkit/explain.h"
#include "stubkit/stubkit.h"

namespace {

constexpr int kOk = 0;
constexpr int kFailed = 1;
constexpr int kBadInput = 2;

constexpr absl::string_view kUsage = R"(usage: stubkit-explain [flags]

Prints, for a call that keeps failing, when each attempt can start (earliest,
median, latest: the backoff's jitter at its extremes), what stops the call
and when, and the longest it can take. Computed by stubkit's own retry loop
on a fake clock, not by a model of it.

Options, from a gRPC service config (the flags below layer over it, as a
call's options over a client's):
  --service-config=FILE    a gRPC service config (JSON)
  --method=NAME            package.Service/Method or package.Service.Method
                           (required with --service-config)
Or from flags:
  --max-attempts=N         RetryPolicy::LimitedErrorCount(N - 1)
  --time-limit=DURATION    RetryPolicy::LimitedTime(DURATION)
  --initial-backoff=DURATION --max-backoff=DURATION --multiplier=X
  --jitter=KIND            default | full | proportional[:F] | none | grpc
  --attempt-timeout=DURATION  --total-timeout=DURATION
  --deadline=DURATION      a deadline this far from now
  --min-attempt-time=DURATION
  --idempotent, --non-idempotent
                           whether the method may be repeated, as its
                           proto's idempotency_level says (neither a file
                           nor a name says it: without either flag the
                           table says "unknown" and assumes it may); a
                           file's retryPolicy still retries the method, as
                           it does in the running client
Assumptions:
  --attempt-duration=DURATION  how long each attempt runs before it fails
                               (default 0)
  --failure=CODE           the code each attempt fails with (UNAVAILABLE)
Load (--load): attempts the server gets per call offered, by the fraction
of attempts it fails (stubkit::ExplainLoad; a model, see docs/explain.md):
  --load                   print the load table instead of the schedule
  --rate=N                 calls offered per second (default 100)
  --failing=P,P,...        failure percentages (default 0,1,10,50,100)
  --throttle=TOKENS:RATIO  a RetryThrottle (gRPC's retryThrottling)
  --budget=FRACTION:PER_S[:TTL]  a RetryBudget (e.g. 0.2:10:10s)
  --hedging=N:DELAY        a HedgingPolicy of N attempts, DELAY apart
                           (--attempt-duration is the latency they race)
  --clients=N              the rate is spread over N clients, each with its
                           own bucket or budget (default 1)
  --outage=DURATION        also the attempts per call offered during an
                           outage this long (every attempt failing)
  --layers=N               N layers of servers calling servers, each with
                           these options: the backend's attempts per call
                           offered at the top, with and without IncomingCall
                           and its "don't retry" (stubkit::ExplainLayers)
Output:
  --svg=FILE               also write the schedule as an SVG chart (with
                           --load or --layers: the load against the
                           failure fraction, a line per variant)
Why not:
  --why-not=TEXT           say why a call stopped, from its status's text
                           (its message, or absl::Status::ToString()); "-"
                           reads the text from standard input
  --help                   this text

Durations: 200ms, 1.5s, 10m (or 10min), 1h (or a service config's "0.2s").
Exit codes: 0 done; 2 bad input (flag, file, options, text without a stubkit
summary, a file without an entry for --method), with a message on standard
error; 1 the SVG could not be written.
)";

struct Flags {
  std::optional<std::string> service_config;
  std::optional<std::string> method;
  std::optional<std::string> why_not;
  std::optional<std::string> svg;
  stubkit::Options call;
  stubkit::ExplainAssumptions assumptions;
  // --idempotent or --non-idempotent: the proto's idempotency_level.
  bool idempotency_given = false;
  bool help = false;
  // The backoff flags, applied over the effective backoff at the end.
  std::optional<std::chrono::nanoseconds> initial_backoff;
  std::optional<std::chrono::nanoseconds> max_backoff;
  std::optional<double> multiplier;
  std::optional<stubkit::Jitter> jitter;
  // --load and its assumptions.
  bool load = false;
  stubkit::LoadAssumptions load_assumptions;
  int layers = 0;  // --layers: 0 for none
  // The load flags given, each a name: refused where nothing reads them.
  std::vector<std::string> load_flags;
};

absl::StatusOr<std::chrono::nanoseconds> ParseDurationFlag(
    absl::string_view name, absl::string_view value) {
  // "10min" reads as C++'s 10min; absl spells it "10m".
  std::string text(value);
  if (absl::EndsWith(text, "min")) text.replace(text.size() - 3, 3, "m");
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": \"", value,
                     "\" is not a duration (such as 200ms, 1.5s, 10m)"));
  }
  return absl::ToChronoNanoseconds(d);
}

absl::StatusOr<stubkit::Jitter> ParseJitter(absl::string_view value) {
  if (value == "default") return stubkit::Jitter::UpToInitialDelay();
  if (value == "full") return stubkit::Jitter::Full();
  if (value == "none") return stubkit::Jitter::None();
  if (value == "grpc") return stubkit::Jitter::Grpc();
  if (value == "proportional") return stubkit::Jitter::Proportional();
  double fraction = 0;
  if (absl::ConsumePrefix(&value, "proportional:") &&
      absl::SimpleAtod(value, &fraction)) {
    return stubkit::Jitter::Proportional(fraction);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--jitter: \"", value,
                   "\" is not one of default, full, proportional[:F], none, "
                   "grpc"));
}

// A code's name as stubkit prints it ("UNAVAILABLE"), or its number.
absl::StatusOr<absl::StatusCode> ParseCode(absl::string_view value) {
  int number = -1;
  if (absl::SimpleAtoi(value, &number) && number >= 1 && number <= 16) {
    return static_cast<absl::StatusCode>(number);
  }
  for (int code = 1; code <= 16; ++code) {
    if (stubkit::StatusCodeSet{static_cast<grpc::StatusCode>(code)}
            .ToString() == value) {
      return static_cast<absl::StatusCode>(code);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--failure: \"", value, "\" is not a status code (UNAVAILABLE, 14)"));
}

// "A:B[:C]" as its parts.
std::vector<std::string> Parts(absl::string_view value) {
  return absl::StrSplit(value, ':');
}

absl::Status Bad(absl::string_view name, absl::string_view value,
                 absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", name, ": \"", value, "\" is not ", want));
}

// --rate and --failing.
absl::Status ParseLoadShape(absl::string_view name, absl::string_view value,
                            stubkit::LoadAssumptions& load) {
  if (name == "rate") {
    if (!absl::SimpleAtod(value, &load.offered_rate) ||
        !(load.offered_rate > 0) || std::isinf(load.offered_rate)) {
      return Bad(name, value, "a positive number of calls per second");
    }
    return absl::OkStatus();
  }
  load.failure_fractions.clear();
  for (absl::string_view part : absl::StrSplit(value, ',')) {
    double percent = 0;
    if (!absl::SimpleAtod(absl::StripSuffix(part, "%"), &percent) ||
        !(percent >= 0 && percent <= 100)) {
      return Bad(name, value, "a list of percentages in [0, 100]");
    }
    load.failure_fractions.push_back(percent / 100);
  }
  return absl::OkStatus();
}

// --throttle, --budget, --hedging: the limiters and hedging the load mode
// reads (a service config sets them too).
absl::Status ParseLimiter(absl::string_view name, absl::string_view value,
                          Flags& flags) {
  const std::vector<std::string> p = Parts(value);
  double a = 0, b = 0;
  const bool numbers = p.size() >= 2 && absl::SimpleAtod(p[0], &a) &&
                       (name == "hedging" || absl::SimpleAtod(p[1], &b));
  if (name == "throttle") {
    if (!numbers || p.size() != 2) return Bad(name, value, "TOKENS:RATIO");
    flags.call.set<stubkit::RetryThrottleOption>(
        std::make_shared<stubkit::RetryThrottle>(
            stubkit::RetryThrottle::Config().WithMaxTokens(a).WithTokenRatio(
                b)));
  } else if (name == "budget") {
    auto ttl = p.size() == 3 ? ParseDurationFlag(name, p[2])
                             : absl::StatusOr<std::chrono::nanoseconds>(
                                   std::chrono::seconds(10));
    if (!numbers || p.size() > 3 || !ttl.ok()) {
      return Bad(name, value, "FRACTION:PER_SECOND[:TTL]");
    }
    flags.call.set<stubkit::RetryBudgetOption>(
        std::make_shared<stubkit::RetryBudget>(stubkit::RetryBudget::Config()
                                                   .WithPercentCanRetry(a)
                                                   .WithMinRetriesPerSecond(b)
                                                   .WithTtl(*ttl)));
  } else {
    auto delay = p.size() == 2 ? ParseDurationFlag(name, p[1])
                               : absl::StatusOr<std::chrono::nanoseconds>();
    if (!numbers || p.size() != 2 || !delay.ok() || a != std::floor(a)) {
      return Bad(name, value, "ATTEMPTS:DELAY");
    }
    flags.call.set<stubkit::HedgingPolicyOption>(
        stubkit::HedgingPolicy()
            .WithMaxAttempts(static_cast<int>(a))
            .WithHedgingDelay(*delay));
  }
  return absl::OkStatus();
}

using DurationSetter = void (*)(Flags&, std::chrono::nanoseconds);

// The flags whose value is a duration, and what each sets; null for
// another name.
DurationSetter FindDurationFlag(absl::string_view name) {
  using std::chrono::nanoseconds;
  static const auto* const kSetters = new std::map<absl::string_view,
                                                   DurationSetter>{
      {"time-limit",
       [](Flags& flags, nanoseconds d) {
         flags.call.set<stubkit::RetryPolicyOption>(
             stubkit::RetryPolicy::LimitedTime(d));
       }},
      {"initial-backoff",
       [](Flags& flags, nanoseconds d) { flags.initial_backoff = d; }},
      {"max-backoff",
       [](Flags& flags, nanoseconds d) { flags.max_backoff = d; }},
      {"attempt-timeout",
       [](Flags& flags, nanoseconds d) {
         flags.call.set<stubkit::AttemptTimeoutOption>(d);
       }},
      {"total-timeout",
       [](Flags& flags, nanoseconds d) {
         flags.call.set<stubkit::TotalTimeoutOption>(d);
       }},
      {"deadline",
       [](Flags& flags, nanoseconds d) {
         flags.call.set<stubkit::DeadlineOption>(
             std::chrono::system_clock::now() +
             std::chrono::duration_cast<std::chrono::system_clock::duration>(
                 d));
       }},
      {"min-attempt-time",
       [](Flags& flags, nanoseconds d) {
         flags.call.set<stubkit::MinAttemptTimeOption>(d);
       }},
      {"outage",
       [](Flags& flags, nanoseconds d) {
         flags.load_assumptions.outage = d;
         flags.load_flags.push_back("outage");
       }},
      {"attempt-duration",
       [](Flags& flags, nanoseconds d) {
         flags.assumptions.attempt_duration = d;
       }},
  };
  auto it = kSetters->find(name);
  return it == kSetters->end() ? nullptr : it->second;
}

// --name=value flags other than durations.
absl::Status ParseValueFlag(absl::string_view name, absl::string_view value,
                            Flags& flags) {
  if (name == "service-config") {
    flags.service_config = std::string(value);
  } else if (name == "method") {
    flags.method = std::string(value);
  } else if (name == "why-not") {
    flags.why_not = std::string(value);
  } else if (name == "svg") {
    flags.svg = std::string(value);
  } else if (name == "max-attempts") {
    int n = 0;
    if (!absl::SimpleAtoi(value, &n) || n < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--max-attempts: \"", value, "\" is not a whole number >= 1"));
    }
    flags.call.set<stubkit::RetryPolicyOption>(
        stubkit::RetryPolicy::LimitedErrorCount(n - 1));
  } else if (name == "multiplier") {
    double x = 0;
    if (!absl::SimpleAtod(value, &x)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--multiplier: \"", value, "\" is not a number"));
    }
    flags.multiplier = x;
  } else if (name == "jitter") {
    auto j = ParseJitter(value);
    if (!j.ok()) return j.status();
    flags.jitter = *j;
  } else if (name == "clients") {
    flags.load_flags.push_back("clients");
    int& clients = flags.load_assumptions.clients;
    if (!absl::SimpleAtoi(value, &clients) || clients < 1) {
      return Bad(name, value, "a whole number of clients >= 1");
    }
  } else if (name == "layers") {
    if (!absl::SimpleAtoi(value, &flags.layers) || flags.layers < 1 ||
        flags.layers > 100) {
      return Bad(name, value, "a whole number of layers in [1, 100]");
    }
    flags.load = true;
  } else if (name == "rate" || name == "failing") {
    flags.load_flags.push_back(std::string(name));
    return ParseLoadShape(name, value, flags.load_assumptions);
  } else if (name == "throttle" || name == "budget" || name == "hedging") {
    return ParseLimiter(name, value, flags);
  } else if (name == "failure") {
    auto code = ParseCode(value);
    if (!code.ok()) return code.status();
    flags.assumptions.failure = *code;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown flag --", name, " (see --help)"));
  }
  return absl::OkStatus();
}

absl::Status ParseFlag(absl::string_view arg, Flags& flags) {
  if (arg == "--help" || arg == "-h") {
    flags.help = true;
    return absl::OkStatus();
  }
  if (arg == "--load") {
    flags.load = true;
    return absl::OkStatus();
  }
  // What the proto says, as the generated code would pass it: a file's
  // rules (its retryPolicy, IdempotencyMapOption) still layer over it, as
  // they do in the running client.
  if (arg == "--idempotent" || arg == "--non-idempotent") {
    flags.assumptions.idempotency = arg == "--idempotent"
                                        ? stubkit::Idempotency::kIdempotent
                                        : stubkit::Idempotency::kNonIdempotent;
    flags.idempotency_given = true;
    return absl::OkStatus();
  }
  const size_t eq = arg.find('=');
  if (!absl::StartsWith(arg, "--") || eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown argument \"", arg, "\" (flags are --name=value; see --help)"));
  }
  const absl::string_view name = arg.substr(2, eq - 2);
  const absl::string_view value = arg.substr(eq + 1);
  if (DurationSetter set = FindDurationFlag(name)) {
    absl::StatusOr<std::chrono::nanoseconds> d = ParseDurationFlag(name, value);
    if (!d.ok()) return d.status();
    set(flags, *d);
    return absl::OkStatus();
  }
  return ParseValueFlag(name, value, flags);
}

int BadInput(const absl::Status& status) {
  std::cerr << "stubkit-explain: " << status.message() << "\n";
  return kBadInput;
}

int RunWhyNot(const std::string& text_flag) {
  std::string text = text_flag;
  if (text == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin),
                std::istreambuf_iterator<char>());
  }
  absl::StatusOr<stubkit::StopAdvice> advice =
      stubkit::WhyNot(absl::string_view(text));
  if (!advice.ok()) return BadInput(advice.status());
  std::cout << advice->ToString();
  return kOk;
}

// The client's options from --service-config, and the backoff the backoff
// flags change: the method's, else the default.
absl::Status LoadClient(const Flags& flags, const std::string& method,
                        stubkit::Options& client,
                        stubkit::ExponentialBackoffPolicy& backoff) {
  if (!flags.service_config.has_value()) return absl::OkStatus();
  if (!flags.method.has_value()) {
    return absl::InvalidArgumentError(
        "--service-config needs --method=package.Service/Method");
  }
  absl::StatusOr<stubkit::ServiceConfig> config =
      stubkit::LoadServiceConfigFile(*flags.service_config);
  if (!config.ok()) return config.status();
  client = config->ToOptions();
  backoff = config->OptionsFor(method).get<stubkit::BackoffPolicyOption>();
  return absl::OkStatus();
}

// The backoff flags over `backoff`, set in `call` if any is given.
void ApplyBackoffFlags(const Flags& flags,
                       stubkit::ExponentialBackoffPolicy backoff,
                       stubkit::Options& call) {
  if (!flags.initial_backoff && !flags.max_backoff && !flags.multiplier &&
      !flags.jitter) {
    return;
  }
  if (flags.initial_backoff) {
    backoff = backoff.WithInitialDelay(*flags.initial_backoff);
    // Only an explicit --max-backoff below it is an error.
    if (!flags.max_backoff &&
        backoff.maximum_delay() < *flags.initial_backoff) {
      backoff = backoff.WithMaximumDelay(*flags.initial_backoff);
    }
  }
  if (flags.max_backoff) {
    backoff = backoff.WithMaximumDelay(*flags.max_backoff);
  }
  if (flags.multiplier) backoff = backoff.WithMultiplier(*flags.multiplier);
  if (flags.jitter) backoff = backoff.WithJitter(*flags.jitter);
  call.set<stubkit::BackoffPolicyOption>(backoff);
}

// The assumed idempotency setting ("idempotent: unknown, assumed ...") in
// the command's words: the flag given, or how to give one. For the
// schedule and the --load header alike.
void SayIdempotency(const Flags& flags, std::vector<std::string>& settings) {
  for (std::string& s : settings) {
    if (!absl::StartsWith(s, "idempotent: unknown")) continue;
    if (flags.idempotency_given) {
      s = absl::StrCat(
          "idempotent: ",
          flags.assumptions.idempotency == stubkit::Idempotency::kIdempotent
              ? "yes (--idempotent"
              : "no (--non-idempotent",
          ": the proto's idempotency_level)");
    } else {
      s = "idempotent: unknown, assumed yes (pass --idempotent or "
          "--non-idempotent: neither a file nor a method's name says what "
          "its proto declares)";
    }
  }
}

// The failure fractions a chart is drawn at: every 1 %, and either side of
// a bucket's cut-off, where the load drops at once.
std::vector<double> ChartFractions(std::optional<double> cutoff) {
  std::vector<double> fractions;
  for (int percent = 0; percent <= 100; ++percent) {
    fractions.push_back(percent / 100.0);
  }
  if (cutoff.has_value()) {
    fractions.push_back(*cutoff);
    fractions.push_back(std::nextafter(*cutoff, 1.0));
  }
  return fractions;
}

// Writes `svg` to --svg's file, if given; if it cannot, says why (the
// system's reason, as errno has it).
int WriteSvg(const Flags& flags, const std::string& svg) {
  if (!flags.svg.has_value()) return kOk;
  errno = 0;
  std::ofstream out(*flags.svg);
  int error = out.is_open() ? 0 : errno;
  if (out.is_open()) {
    out << svg;
    out.close();
    if (!out) error = errno;
  }
  if (!out) {
    std::cerr << "stubkit-explain: could not write " << *flags.svg << ": "
              << (error != 0 ? std::strerror(error)
                             : "the stream failed without a system error")
              << "\n";
    return kFailed;
  }
  return kOk;
}

// --load: the table of attempts per call offered.
int RunLoad(const Flags& flags, const stubkit::Options& client,
            const std::string& method, const stubkit::Options& call) {
  stubkit::LoadAssumptions load = flags.load_assumptions;
  load.attempt = flags.assumptions;
  if (flags.layers > 0) {
    // The file's and the flags' options at every layer.
    absl::StatusOr<stubkit::LayersExplanation> layers =
        stubkit::ExplainLayers(flags.layers, {client}, method, load, call);
    if (!layers.ok()) return BadInput(layers.status());
    std::cout << layers->ToTable();
    load.failure_fractions = ChartFractions(std::nullopt);
    if (!flags.svg.has_value()) return kOk;
    return WriteSvg(flags, stubkit::ExplainLayers(flags.layers, {client},
                                                  method, load, call)
                               ->ToSvg());
  }
  absl::StatusOr<stubkit::LoadExplanation> e =
      stubkit::ExplainLoad(client, method, load, call);
  if (!e.ok()) return BadInput(e.status());
  SayIdempotency(flags, e->settings);
  std::cout << e->ToTable();
  if (!flags.svg.has_value()) return kOk;
  load.failure_fractions = ChartFractions(e->throttle_cutoff);
  load.outage.reset();
  return WriteSvg(flags,
                  stubkit::ExplainLoad(client, method, load, call)->ToSvg());
}

// A load flag where nothing reads it would be a silent default: the
// schedule reads none, --layers only --failing (its rows).
absl::Status CheckLoadFlags(const Flags& flags) {
  for (const std::string& name : flags.load_flags) {
    const bool layers_read_it = name == "failing";
    if (!flags.load) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " applies to --load",
                       layers_read_it ? " or --layers" : "",
                       " only: the schedule does not read it"));
    }
    // --layers is a --load of its own: naming --load does not make it read
    // the flag.
    if (flags.layers > 0 && !layers_read_it) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name,
                       " is not read with --layers, which reads only "
                       "--failing (drop --layers for the one-layer table)"));
    }
  }
  return absl::OkStatus();
}

int Run(const Flags& flags) {
  if (flags.why_not.has_value()) return RunWhyNot(*flags.why_not);
  if (absl::Status status = CheckLoadFlags(flags); !status.ok()) {
    return BadInput(status);
  }
  const std::string method = flags.method.value_or("example.Service.Method");
  stubkit::Options client;
  stubkit::ExponentialBackoffPolicy backoff;
  if (absl::Status status = LoadClient(flags, method, client, backoff);
      !status.ok()) {
    return BadInput(status);
  }
  stubkit::Options call = flags.call;
  ApplyBackoffFlags(flags, backoff, call);
  if (flags.load) return RunLoad(flags, client, method, call);
  absl::StatusOr<stubkit::Explanation> e =
      stubkit::Explain(client, method, call, flags.assumptions);
  if (!e.ok()) return BadInput(e.status());
  // A typo in --method or in the file's names would otherwise explain a
  // method that is not retried at all.
  if (e->not_in_service_config) {
    return BadInput(absl::InvalidArgumentError(
        absl::StrCat("--method=", method, ": ", e->notes.front())));
  }
  if (e->idempotency_assumed) SayIdempotency(flags, e->settings);
  std::cout << e->ToTable();
  if (!flags.svg.has_value()) return kOk;
  return WriteSvg(flags, e->ToSvg());
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    absl::Status parsed = ParseFlag(argv[i], flags);
    if (!parsed.ok()) return BadInput(parsed);
  }
  if (flags.help) {
    std::cout << kUsage;
    return kOk;
  }
  return Run(flags);
}
