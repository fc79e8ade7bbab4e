// Copyright 2026 The stubkit Authors.
//
// The simulation's world: a fake scheduler (clock, sleepers, timer) with a
// manual event queue, and a fake transport that plays each attempt's script.
//
// Design
//
// - Time moves only through `SimScheduler`. Everything that happens later is
//   an event (time, sequence number, owning call). The driver pops the
//   earliest event, moves the clock there and runs it. Ties run in the order
//   they were scheduled, so a seed replays exactly.
// - Async attempts complete as events: the transport schedules an attempt's
//   completion at its scripted latency, or at the attempt's deadline when
//   that comes first, or never ("hang until cancelled").
// - Sync calls run on the driver thread. A sync attempt, a sync stream
//   `Read` and `Sleeper::SleepFor` pump the queue up to their own end, so the
//   other calls of the scenario (async, sharing a throttle) and scheduled
//   cancellations make progress while the sync call "blocks".
// - Cancellation. `grpc::ClientContext::TryCancel` on a context that never
//   started a call only sets a flag gRPC keeps private, so the transport
//   learns of cancels from stubkit instead: every cancel stubkit sends goes
//   through `internal::CancelAttempt`, which tells its attempt tap, the
//   `ContextLedger` below. The transport asks the ledger after every event,
//   and for a sync attempt after every event it pumps. An attempt whose
//   context was cancelled completes at once with CANCELLED, replacing its
//   scripted completion, as gRPC does. This covers every route a
//   cancellation takes: a `CancellationToken` (and so an observer that
//   cancels from inside its callback), a hedging loser,
//   `StreamReader::Cancel()` and the streams' establishment timer.
// - Trailers. The decision reads a failed attempt's trailers
//   (`grpc-retry-pushback-ms`) through `internal::ServerTrailers`, which
//   asks the same tap first: the transport hands the ledger the trailers
//   its script says. RetryInfo travels in the status payload. No private
//   member of grpc::ClientContext is touched.
// - Interleavings. gRPC runs callbacks on several threads. With
//   `preempt` on, each call into the scheduler's `Schedule`/`Cancel` (made
//   by the code under test outside its own locks) may first run a due event
//   of another call, as a concurrent callback thread would: that is how the
//   hedging-with-throttle hang is reached deterministically.
// - Other threads: a hedged sync call runs attempt 1 on its caller's thread
//   and each hedge on a thread of its own (hedging.h). Their sync attempts
//   do not pump the queue: they register with the transport, which posts
//   their completion as an event, and block until the driver ran it. Only
//   the driver runs events and moves the clock, and it does so only while
//   every such thread is parked ("quiescent": blocked in the transport, in
//   the caller's wait, or gone; see `Quiesce`). So a hedge thread the timer
//   spawned at fake time T reaches the transport at T, as a hedge on a real
//   clock starts at once. The driver holds the "world" mutex except while
//   it waits for quiescence; the other threads take it to touch the
//   simulation's state (attempt records, the observer's log): that is also
//   the happens-before edge TSan needs.
// - Streams: server, client and bidi, sync and async (gRPC's stream
//   interfaces and callback streams bound to the code's reactors). Writes
//   reach the server at once and are recorded per attempt; an async
//   stream's every reaction is an event and `OnDone` comes last, once the
//   stream ended, its operations reacted and its holds are gone.

#ifndef STUBKIT_TESTS_SIMULATION_SIM_FAKES_H_
#define STUBKIT_TESTS_SIMULATION_SIM_FAKES_H_

#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/wrappers.pb.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>
#include <grpcpp/support/sync_stream.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "stubkit/clock.h"
#include "stubkit/internal/api/attempt_context.h"
#include "stubkit/status.h"

namespace stubkit {
namespace sim {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using TimePoint = Clock::time_point;
using Msg = google::protobuf::Int64Value;

// ---------------------------------------------------------------------------
// What gRPC keeps in the context of a started call, for contexts that never
// start one: whether it was cancelled and the trailers its server sent.
// stubkit tells the ledger of each cancel it sends and asks it for a failed
// attempt's trailers through its attempt tap (stubkit/internal/
// attempt_context.h); gRPC's public global context callbacks tell it when a
// context dies, so a new context at a reused address starts clean (a hedged
// call cancels its losers, ended or not; a token may cancel a context
// before its attempt reaches the transport).
class ContextLedger final : public internal::AttemptTap {
 public:
  // The process's ledger, made and installed on first use: gRPC takes
  // global callbacks once per process, so it is never uninstalled (nor
  // destroyed: contexts may die after main).
  static ContextLedger& Get() {
    static ContextLedger* const ledger = [] {
      auto* made = new ContextLedger;
      grpc::ClientContext::SetGlobalCallbacks(&made->lifetimes_);
      internal::SetAttemptTap(made);
      return made;
    }();
    return *ledger;
  }

  bool IsCancelled(const grpc::ClientContext& context) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(&context);
    return it != entries_.end() && it->second.cancelled;
  }
  // The server's trailer `key: value` for `context`'s ended attempt.
  void AddTrailer(const grpc::ClientContext& context, std::string key,
                  std::string value) {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& entry = entries_[&context];
    entry.strings.emplace_back(std::move(key), std::move(value));
    const auto& [k, v] = entry.strings.back();
    entry.trailers.emplace(grpc::string_ref(k.data(), k.size()),
                           grpc::string_ref(v.data(), v.size()));
  }

  // internal::AttemptTap
  const internal::ServerTrailerMap* Trailers(
      const grpc::ClientContext& context) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(&context);
    if (it == entries_.end() || it->second.trailers.empty()) return nullptr;
    return &it->second.trailers;  // stays put until `context` dies
  }
  void Cancelled(const grpc::ClientContext& context) override {
    std::lock_guard<std::mutex> lock(mu_);
    entries_[&context].cancelled = true;
  }

 private:
  struct Entry {
    bool cancelled = false;
    std::deque<std::pair<std::string, std::string>> strings;  // stay put
    internal::ServerTrailerMap trailers;                      // into `strings`
  };
  class Lifetimes final : public grpc::ClientContext::GlobalCallbacks {
   public:
    explicit Lifetimes(ContextLedger* ledger) : ledger_(ledger) {}
    void DefaultConstructor(grpc::ClientContext*) override {}
    void Destructor(grpc::ClientContext* context) override {
      std::lock_guard<std::mutex> lock(ledger_->mu_);
      ledger_->entries_.erase(context);
    }

   private:
    ContextLedger* ledger_;
  };

  ContextLedger() = default;

  Lifetimes lifetimes_{this};
  mutable std::mutex mu_;
  std::map<const grpc::ClientContext*, Entry> entries_;
};

inline TimePoint AddSat(TimePoint t, nanoseconds d) {
  if (d <= nanoseconds::zero()) return t;
  if (d >= TimePoint::max() - t) return TimePoint::max();
  return t + std::chrono::duration_cast<TimePoint::duration>(d);
}

// ---------------------------------------------------------------------------
class SimScheduler final : public Clock, public Sleeper, public AsyncSleeper {
 public:
  struct Options {
    bool cancel_inline = true;  // AsyncSleeper::Cancel runs done(false) inline
    bool preempt = false;       // see the header comment
    // `Schedule` may fire the wait before it returns (see FireInline).
    bool fire_inline = false;
    // ... running what other calls have due before the wait ends, first.
    // Off when an event may run a sync call that moves the clock on past
    // the wait's end (the waiting suite starts its sync call in an event):
    // then only a wait with nothing due before its end fires inline.
    bool inline_prerun = true;
    uint64_t preempt_seed = 0;
    int64_t max_steps = 200000;
  };

  explicit SimScheduler(Options options)
      : options_(options), rng_(options.preempt_seed) {
    driver_ = std::this_thread::get_id();
    driver_tid_ = static_cast<pid_t>(::syscall(SYS_gettid));
  }

  // --- Other threads (a hedged sync call's caller and hedges) -------------
  // The world mutex: held by the driver except inside `Quiesce` (and while
  // it waits for a caller thread); other threads lock it to touch the
  // simulation's state.
  std::mutex& world_mutex() { return world_mu_; }
  void HoldWorld() { world_lock_ = std::unique_lock<std::mutex>(world_mu_); }
  void ReleaseWorld() {
    if (world_lock_.owns_lock()) world_lock_.unlock();
  }
  // From now on other threads may run: the threads alive now (gRPC's, the
  // watchdog, abandoned callers) are not watched by `Quiesce`.
  void BeginRemote() {
    baseline_.clear();
    for (pid_t t : Tasks()) baseline_.insert(t);
    remote_ = true;
  }
  void EndRemote() { remote_ = false; }
  // Another thread touched the simulation's state (under the world mutex).
  void NoteActivity() { activity_.fetch_add(1, std::memory_order_relaxed); }
  // Driver: lets the other threads run until each is parked, then takes the
  // world back. Parked: sleeping in the kernel (a blocked wait) or gone,
  // three polls in a row with no activity in between, so that a thread
  // woken by another one is seen running.
  void Quiesce() {
    if (!remote_) return;
    const bool held = world_lock_.owns_lock();
    if (held) world_lock_.unlock();
    int calm = 0;
    uint64_t seen = activity_.load();
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (calm < 3) {
      bool busy = false;
      for (pid_t t : Tasks()) {
        if (t == driver_tid_ || baseline_.count(t) != 0) continue;
        const char state = TaskState(t);
        if (state == 'R' || state == 'D' || state == 'W') {
          busy = true;
          break;
        }
      }
      const uint64_t now = activity_.load();
      if (busy || now != seen) {
        calm = 0;
        seen = now;
      } else {
        ++calm;
      }
      if (calm >= 3) break;
      if (std::chrono::steady_clock::now() > give_up) break;  // reported
      std::this_thread::sleep_for(std::chrono::microseconds(30));
    }
    if (held) world_lock_.lock();
  }

  // Called after every event; the transport polls for cancellation there.
  void set_after_event(std::function<void()> hook) {
    after_event_ = std::move(hook);
  }

  TimePoint Now() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return now_;
  }

  // A sync wait: the other calls run meanwhile.
  void SleepFor(nanoseconds duration) override {
    RunUntil(AddSat(Now(), duration), nullptr);
  }

  uint64_t Schedule(nanoseconds duration,
                    std::function<void(bool)> done) override {
    if (FireInline(duration, done)) return ++inline_ids_ | kInlineIdBit;
    if (inline_depth_ > 0 && on_driver() && owner_ == inline_owner_) {
      ++inline_nested_;
    }
    const uint64_t id = ScheduleQueued(duration, std::move(done));
    MaybePreempt();
    return id;
  }

  // A wait that neither fires inside the call that schedules it nor lets
  // other calls run meanwhile: the stream attempt's establishment timer,
  // started between the attempt's set-up and its start, and stopped
  // between its end and the retry decision (no other call's failure may
  // move the throttle in between: the model reads it at the end).
  uint64_t ScheduleQueued(nanoseconds duration,
                          std::function<void(bool)> done) {
    uint64_t id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      id = EnqueueLocked(AddSat(now_, duration), owner_, std::move(done));
    }
    return id;
  }

  void Cancel(uint64_t id) override {
    CancelQueued(id);
    MaybePreempt();
  }
  // `Cancel` without letting other calls run (see ScheduleQueued).
  void CancelQueued(uint64_t id) {
    std::function<void(bool)> done;
    int owner;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = index_.find(id);
      if (it == index_.end()) return;
      owner = queue_[it->second].owner;
      done = std::move(queue_[it->second].fn);
      queue_.erase(it->second);
      index_.erase(it);
      if (!options_.cancel_inline) {
        EnqueueLocked(now_, owner,
                      [done = std::move(done)](bool) { done(false); });
      }
    }
    if (options_.cancel_inline) done(false);
  }

  // Transport events: `fn(true)` at `when`.
  uint64_t PostAt(TimePoint when, int owner, std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    return EnqueueLocked(when, owner, [fn = std::move(fn)](bool) { fn(); });
  }
  // Removes a pending event without running it.
  bool Remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(id);
    if (it == index_.end()) return false;
    queue_.erase(it->second);
    index_.erase(it);
    return true;
  }

  // Runs the earliest event; false when there is none.
  bool RunOne() { return RunNext(TimePoint::max(), false); }

  // Runs the events due by `until`, then moves the clock to `until`. Stops
  // early (returning true, clock at the stopping event) when `stop` says so.
  // With an infinite `until` and no events left it returns false at once:
  // the caller would wait forever.
  bool RunUntil(TimePoint until, const std::function<bool()>& stop) {
    // A sync wait or attempt on the driver ends at `until`: no inline-fired
    // wait may move the clock past it meanwhile.
    struct Horizon {
      std::vector<TimePoint>* h;
      Horizon(std::vector<TimePoint>* h, TimePoint t) : h(h) {
        h->push_back(t);
      }
      ~Horizon() { h->pop_back(); }
    } horizon(&horizons_, until);
    for (;;) {
      if (stop && stop()) return true;
      if (!RunNext(until, false)) break;
    }
    if (stop && stop()) return true;
    std::lock_guard<std::mutex> lock(mu_);
    if (until != TimePoint::max() && until > now_) now_ = until;
    return false;
  }

  bool empty() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.empty();
  }
  int64_t steps() const { return steps_.load(); }
  bool over_budget() const { return steps_.load() > options_.max_steps; }
  void set_owner(int owner) {
    std::lock_guard<std::mutex> lock(mu_);
    owner_ = owner;
  }
  bool on_driver() const { return std::this_thread::get_id() == driver_; }

 private:
  struct Key {
    TimePoint when;
    uint64_t seq;
    bool operator<(const Key& o) const {
      return when != o.when ? when < o.when : seq < o.seq;
    }
  };
  struct Event {
    int owner;
    std::function<void(bool)> fn;
  };

  uint64_t EnqueueLocked(TimePoint when, int owner,
                         std::function<void(bool)> fn) {
    uint64_t id = ++next_id_;
    Key key{when, id};
    queue_.emplace(key, Event{owner, std::move(fn)});
    index_.emplace(id, key);
    return id;
  }

  // Runs the first event due by `until` (of another call than the running
  // one when `other_only`).
  bool RunNext(TimePoint until, bool other_only) {
    Event event;
    int previous_owner;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = queue_.begin();
      if (other_only) {
        while (it != queue_.end() && it->first.when <= now_ &&
               it->second.owner == owner_) {
          ++it;
        }
        if (it == queue_.end() || it->first.when > now_) return false;
      }
      if (it == queue_.end() || it->first.when > until) return false;
      if (it->first.when > now_) now_ = it->first.when;
      index_.erase(it->first.seq);
      event = std::move(it->second);
      queue_.erase(it);
      previous_owner = owner_;
      owner_ = event.owner;
    }
    ++steps_;
    if (steps_.load() > options_.max_steps) {
      // Runaway: stop feeding the code under test; the runner reports it.
      std::lock_guard<std::mutex> lock(mu_);
      owner_ = previous_owner;
      queue_.clear();
      index_.clear();
      return false;
    }
    event.fn(true);
    Quiesce();  // what the event woke or spawned runs to its next wait
    if (after_event_) after_event_();
    std::lock_guard<std::mutex> lock(mu_);
    owner_ = previous_owner;
    return true;
  }

  // The contract (clock.h) lets a sleeper run `done` on any thread, or
  // inline in `Schedule`. With `fire_inline`, `Schedule` sometimes runs
  // what falls due before the wait ends, moves the clock to its end, runs
  // `done(true)` and then what fell due meanwhile (the next attempt's
  // answer, say) before returning, as a timer thread and gRPC callback
  // threads may do while the scheduling thread is still inside `Schedule`:
  // the caller then gets back the id of a wait that is over while a newer
  // one is pending (issue 22, item 3). Not nested, driver only, never for
  // an infinite wait nor past the end of a sync wait the driver is in.
  static constexpr uint64_t kInlineIdBit = uint64_t{1} << 62;
  bool FireInline(nanoseconds duration, std::function<void(bool)>& done) {
    if (!options_.fire_inline || !on_driver() || inline_depth_ > 0 ||
        preempting_) {
      return false;
    }
    if (std::uniform_int_distribution<int>(0, 1)(rng_) != 0) return false;
    const TimePoint at = AddSat(Now(), duration);
    if (at == TimePoint::max()) return false;
    for (TimePoint h : horizons_) {
      if (h < at) return false;
    }
    ++inline_depth_;
    inline_owner_ = owner_;
    // No preemption meanwhile: it could run this call's own events.
    const bool was_preempting = preempting_;
    preempting_ = true;
    // What other calls have due before the wait ends runs first, as on
    // other threads while this one is still inside `Schedule`. An event of
    // this call due before then (its cancel, say) ends that: the wait is
    // then scheduled as usual (a cancel that comes while `Schedule` has not
    // returned only takes effect once it has; that thread is not stalled
    // for a whole wait).
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = queue_.begin();
        if (it == queue_.end() || it->first.when >= at) break;
        if (it->second.owner == owner_ || !options_.inline_prerun) {
          --inline_depth_;
          preempting_ = was_preempting;
          return false;
        }
      }
      if (!RunNext(at - nanoseconds(1), false)) break;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (at > now_) now_ = at;
    }
    ++inline_fired_;
    const int64_t nested = inline_nested_;
    done(true);
    while (RunNext(Now(), false)) {
    }
    preempting_ = was_preempting;
    --inline_depth_;
    // The call began a newer wait meanwhile: the runner may cancel it right
    // after `Schedule` returns (the moment issue 22 item 3 needs).
    if (inline_nested_ > nested && inline_hook_) inline_hook_(inline_owner_);
    return true;
  }

 public:
  int64_t inline_fired() const { return inline_fired_; }
  void set_inline_hook(std::function<void(int)> hook) {
    inline_hook_ = std::move(hook);
  }
  int64_t inline_nested() const { return inline_nested_; }

 private:
  void MaybePreempt() {
    // Only the driver thread touches `preempting_` and `rng_`.
    if (!options_.preempt || !on_driver() || preempting_) return;
    if (std::uniform_int_distribution<int>(0, 2)(rng_) != 0) return;
    preempting_ = true;
    RunNext(TimePoint::max(), /*other_only=*/true);
    preempting_ = false;
  }

  static std::vector<pid_t> Tasks() {
    std::vector<pid_t> out;
    DIR* dir = ::opendir("/proc/self/task");
    if (dir == nullptr) return out;
    while (struct dirent* e = ::readdir(dir)) {
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') {
        out.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
      }
    }
    ::closedir(dir);
    return out;
  }
  // The state letter of /proc/self/task/<tid>/stat; 'X' when gone.
  static char TaskState(pid_t tid) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/self/task/%d/stat",
                  static_cast<int>(tid));
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 'X';
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) return 'X';
    buf[n] = '\0';
    const char* paren = std::strrchr(buf, ')');
    return paren != nullptr && paren[1] == ' ' ? paren[2] : 'X';
  }

  const Options options_;
  std::mt19937_64 rng_;
  std::thread::id driver_;
  pid_t driver_tid_ = 0;
  // Declared before the lock that holds it.
  std::mutex world_mu_;
  std::unique_lock<std::mutex> world_lock_;
  std::set<pid_t> baseline_;
  bool remote_ = false;
  std::atomic<uint64_t> activity_{0};
  std::function<void()> after_event_;
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::hours(1)};
  std::map<Key, Event> queue_;
  std::map<uint64_t, Key> index_;
  uint64_t next_id_ = 0;
  int owner_ = -1;
  bool preempting_ = false;
  int inline_depth_ = 0;
  int inline_owner_ = -1;
  std::function<void(int)> inline_hook_;
  std::vector<TimePoint> horizons_;  // driver only
  uint64_t inline_ids_ = 0;
  int64_t inline_fired_ = 0;
  int64_t inline_nested_ = 0;
  std::atomic<int64_t> steps_{0};
};

// ---------------------------------------------------------------------------
// One attempt's script.
enum class Hint { kNone, kValid, kNegative, kGarbage, kHuge };
enum class InfoHint { kNone, kValid, kMalformed, kOversized, kHuge };

struct AttemptScript {
  enum class Kind { kOk, kFail, kHang } kind = Kind::kOk;
  grpc::StatusCode code = grpc::StatusCode::UNAVAILABLE;
  milliseconds latency{10};  // unary: to completion; stream: per message
  int messages = 0;          // stream: sent before the failure or the hang
  Hint pushback = Hint::kNone;
  int64_t pushback_ms = 0;
  InfoHint retry_info = InfoHint::kNone;
  int64_t retry_info_ms = 0;
};

// What the transport saw of one attempt.
struct AttemptRecord {
  int call = 0;
  int index = 0;
  AttemptScript script;
  TimePoint start;
  TimePoint deadline = TimePoint::max();  // mapped onto the fake clock
  TimePoint end;
  bool ended = false;
  bool by_deadline = false;  // ended DEADLINE_EXCEEDED at its deadline
  bool by_cancel = false;    // ended CANCELLED by its context
  // Ended by the stream's establishment timer (RetryLoopState::
  // BoundEstablishment): the code saw CANCELLED and decided on its own
  // timeout, so the record reads as `by_deadline` at `deadline` (when the timer
  // fired), DEADLINE_EXCEEDED; `SeenStatus` gives what gRPC handed the code.
  bool by_establish = false;
  TimePoint establish_fired = TimePoint::max();
  int64_t throttle_milli_before = -1;  // bucket when the result was handed
  int budget_admits_before = -1;       // the budget's CanWithdraw then (1 or 0)
  grpc::Status status;
  int messages = 0;  // stream messages delivered in this attempt
  TimePoint first_message = TimePoint::max();
  std::string trailer_key;
  std::string trailer_value;
  grpc::ClientContext* context = nullptr;  // while not ended
  uint64_t pending_event = 0;
  bool cancel_posted = false;
  bool stream = false;
  uint64_t start_order = 0;  // the scenario's global order of happenings
  uint64_t end_order = 0;
  TimePoint last_step;
  std::function<void(grpc::Status)> finish;  // async: hand the result over
  // Client and bidi streams: the writes the server received, and whether
  // the client half-closed.
  std::vector<int64_t> writes;
  bool half_closed = false;
};

std::string SerializedStatusWithRetryInfo(InfoHint kind, int64_t ms);

class SimTransport {
 public:
  explicit SimTransport(SimScheduler* scheduler) : sched_(scheduler) {
    ContextLedger::Get();  // installed before the first context is cancelled
    sched_->set_after_event([this] { PollCancels(); });
  }

  // Scripts per call; attempts past the end of a call's list succeed.
  void SetScripts(int call, std::vector<AttemptScript> scripts,
                  int stream_total = 0) {
    calls_[call].scripts = std::move(scripts);
    calls_[call].stream_total = stream_total;
  }
  // Scripts made when each attempt starts (`source(index)`), in place of a
  // list: the waiting suite's backend fails while it is down.
  void SetScriptSource(int call, std::function<AttemptScript(int)> source,
                       int stream_total) {
    calls_[call].source = std::move(source);
    calls_[call].stream_total = stream_total;
  }
  // The limits a call's attempt deadlines come from: the attempt timeout,
  // the call's ends.
  void SetLimits(int call, std::vector<nanoseconds> durations,
                 std::vector<TimePoint> points) {
    calls_[call].snap_durations = std::move(durations);
    calls_[call].snap_points = std::move(points);
  }
  void set_order_counter(uint64_t* order) { order_ = order; }
  void set_throttle_reader(std::function<int64_t()> reader) {
    throttle_milli_ = std::move(reader);
  }
  void set_budget_reader(std::function<int()> reader) {
    budget_admits_ = std::move(reader);
  }
  const std::vector<std::unique_ptr<AttemptRecord>>& attempts(int call) {
    return calls_[call].attempts;
  }
  // A sync attempt found nothing that could ever end it.
  bool sync_hang() const { return sync_hang_; }

  // --- unary -------------------------------------------------------------
  absl::StatusOr<Msg> RunSync(int call, grpc::ClientContext& context) {
    if (!sched_->on_driver()) return RunSyncElsewhere(call, context);
    AttemptRecord* rec = Begin(call, context);
    TimePoint done_at;
    grpc::Status status = Planned(*rec, &done_at);
    bool cancelled = sched_->RunUntil(
        done_at, [&] { return ContextLedger::Get().IsCancelled(context); });
    if (cancelled) {
      rec->by_cancel = true;
      status = grpc::Status(grpc::StatusCode::CANCELLED, "sim: cancelled");
    } else if (done_at == TimePoint::max()) {
      sync_hang_ = true;  // nothing could ever end this attempt
      status = grpc::Status(grpc::StatusCode::INTERNAL, "sim: sync hang");
    }
    End(*rec, status);
    absl::Status result = FromGrpcStatus(status);
    if (!result.ok()) return result;
    Msg response;
    response.set_value(rec->index + 1);
    return response;
  }

  // A sync attempt on another thread (a hedged sync call's caller or a
  // hedge): its completion is an event the driver runs; the thread blocks
  // until then, as on a gRPC channel. A context cancelled before the
  // attempt started ends it at once, as gRPC does.
  absl::StatusOr<Msg> RunSyncElsewhere(int call, grpc::ClientContext& context) {
    std::unique_lock<std::mutex> world(sched_->world_mutex());
    sched_->NoteActivity();
    AttemptRecord* rec = Begin(call, context);
    rec->finish = [this](grpc::Status) { remote_cv_.notify_all(); };
    TimePoint done_at;
    grpc::Status status = Planned(*rec, &done_at);
    if (done_at != TimePoint::max()) {
      rec->pending_event = sched_->PostAt(done_at, call, [this, rec, status] {
        rec->pending_event = 0;
        Complete(*rec, status);
      });
    }
    PollCancels();
    remote_cv_.wait(world, [rec] { return rec->ended; });
    sched_->NoteActivity();
    absl::Status result = FromGrpcStatus(rec->status);
    if (!result.ok()) return result;
    Msg response;
    response.set_value(rec->index + 1);
    return response;
  }

  void StartAsync(int call, grpc::ClientContext& context,
                  std::function<void(absl::StatusOr<Msg>)> done) {
    AttemptRecord* rec = Begin(call, context);
    rec->finish = [rec, done = std::move(done)](grpc::Status status) {
      absl::Status result = FromGrpcStatus(status);
      if (!result.ok()) return done(result);
      Msg response;
      response.set_value(rec->index + 1);
      done(response);
    };
    TimePoint done_at;
    grpc::Status status = Planned(*rec, &done_at);
    if (done_at != TimePoint::max()) {
      rec->pending_event = sched_->PostAt(done_at, call, [this, rec, status] {
        rec->pending_event = 0;
        Complete(*rec, status);
      });
    }
    // A context cancelled before the attempt started (no event ran since).
    PollCancels();
  }

  // --- streams -----------------------------------------------------------
  // A sync server or bidi stream's Read: the message valued `next` (then
  // `next` moves on), or the stream's end.
  bool SyncRead(AttemptRecord& rec, int64_t& next, Msg* msg) {
    if (rec.ended) return false;
    TimePoint at;
    bool message = NextStreamStep(rec, next, &at);
    grpc::ClientContext& context = *rec.context;
    bool cancelled = sched_->RunUntil(
        at, [&] { return ContextLedger::Get().IsCancelled(context); });
    if (cancelled) {
      rec.by_cancel = true;
      End(rec, grpc::Status(grpc::StatusCode::CANCELLED, "sim: cancelled"));
      return false;
    }
    if (at == TimePoint::max()) {
      sync_hang_ = true;
      End(rec, grpc::Status(grpc::StatusCode::INTERNAL, "sim: hang"));
      return false;
    }
    if (message) {
      Deliver(rec);
      msg->set_value(next++);
      return true;
    }
    End(rec, StreamEndStatus(rec, at));
    return false;
  }
  grpc::Status SyncFinish(AttemptRecord& rec) {
    if (!rec.ended) {  // Finish before the end: gRPC waits; we cancel.
      End(rec, grpc::Status(grpc::StatusCode::CANCELLED, "sim"));
    }
    return SeenStatus(rec);
  }

  // The server of a stream call sends values start_after+1 .. total.
  class SyncReader final : public grpc::ClientReaderInterface<Msg> {
   public:
    SyncReader(SimTransport* t, AttemptRecord* rec, int64_t start_after)
        : t_(t), rec_(rec), next_(start_after + 1) {}
    bool Read(Msg* msg) override { return t_->SyncRead(*rec_, next_, msg); }
    grpc::Status Finish() override { return t_->SyncFinish(*rec_); }
    bool NextMessageSize(uint32_t* sz) override {
      *sz = 1 << 20;
      return true;
    }
    void WaitForInitialMetadata() override {}

   private:
    SimTransport* t_;
    AttemptRecord* rec_;
    int64_t next_;
  };

  std::unique_ptr<grpc::ClientReaderInterface<Msg>> OpenSync(
      int call, grpc::ClientContext& context, const Msg& request) {
    AttemptRecord* rec = Begin(call, context);
    rec->stream = true;
    return std::make_unique<SyncReader>(this, rec, request.value());
  }

  class AsyncReader final : public grpc::ClientCallbackReader<Msg> {
   public:
    AsyncReader(SimTransport* t, AttemptRecord* rec, int64_t start_after,
                grpc::ClientReadReactor<Msg>* reactor)
        : t_(t), rec_(rec), next_(start_after + 1), reactor_(reactor) {
      BindReactor(reactor);
      rec_->finish = [this](grpc::Status status) { EndStream(status); };
    }
    void StartCall() override { Step(); }
    void Read(Msg* msg) override { pending_ = msg; }
    void AddHold(int) override {}
    void RemoveHold() override {}

   private:
    void Step() {
      TimePoint at;
      bool message = t_->NextStreamStep(*rec_, next_, &at);
      if (at == TimePoint::max()) return;  // hangs until cancelled
      rec_->pending_event =
          t_->sched_->PostAt(at, rec_->call, [this, message, at] {
            rec_->pending_event = 0;
            if (message) {
              t_->Deliver(*rec_);
              if (pending_ != nullptr) {
                Msg* out = pending_;
                pending_ = nullptr;
                out->set_value(next_++);
                reactor_->OnReadDone(true);
              }
              Step();
            } else {
              EndStream(t_->StreamEndStatus(*rec_, at));
            }
          });
    }
    void EndStream(grpc::Status status) {
      if (rec_->ended) return;
      t_->End(*rec_, status);  // also injects the trailers
      if (pending_ != nullptr) {
        pending_ = nullptr;
        reactor_->OnReadDone(false);
      }
      // The reactor deletes itself in OnDone; so may the context's owner.
      reactor_->OnDone(SeenStatus(*rec_));
    }

    SimTransport* t_;
    AttemptRecord* rec_;
    int64_t next_;
    grpc::ClientReadReactor<Msg>* reactor_;
    Msg* pending_ = nullptr;
  };

  absl::Status OpenAsync(int call, grpc::ClientContext& context,
                         const Msg& request,
                         grpc::ClientReadReactor<Msg>* reactor) {
    AttemptRecord* rec = Begin(call, context);
    rec->stream = true;
    readers_.push_back(
        std::make_unique<AsyncReader>(this, rec, request.value(), reactor));
    PollCancels();
    return absl::OkStatus();
  }

  // --- client and bidi streams (issue 40) ---------------------------------
  // A write reaches the server at once (the clock does not move): it fails
  // only when the attempt has ended, its context was cancelled, or its
  // script fails with no message by now (a latency of 0: a write meets the
  // break). A bidi server answers from its first write's value on, as a
  // server stream from its request's; a client stream's server answers, at
  // its script's end, with the number of writes it received.
  bool WriteStep(AttemptRecord& rec, int64_t value, bool half_close) {
    if (rec.ended || rec.half_closed) return false;
    if (ContextLedger::Get().IsCancelled(*rec.context)) {
      rec.by_cancel = true;
      End(rec, grpc::Status(grpc::StatusCode::CANCELLED, "sim: cancelled"));
      return false;
    }
    const AttemptScript& s = rec.script;
    const TimePoint fails_at = AddSat(rec.start, s.latency);
    if (s.kind == AttemptScript::Kind::kFail && s.messages == 0 &&
        rec.messages == 0 && fails_at <= sched_->Now() &&
        fails_at < rec.deadline) {
      End(rec, FailureStatus(s));
      return false;
    }
    if (half_close) {
      rec.half_closed = true;
    } else {
      rec.writes.push_back(value);
    }
    return true;
  }

  class SyncWriter final : public grpc::ClientWriterInterface<Msg> {
   public:
    SyncWriter(SimTransport* t, AttemptRecord* rec, Msg* response)
        : t_(t), rec_(rec), response_(response) {}
    bool Write(const Msg& msg, grpc::WriteOptions) override {
      return t_->WriteStep(*rec_, msg.value(), false);
    }
    bool WritesDone() override { return t_->WriteStep(*rec_, 0, true); }
    // As a unary attempt: the script's result, at its latency.
    grpc::Status Finish() override {
      if (!rec_->ended) {
        TimePoint done_at;
        grpc::Status status = t_->Planned(*rec_, &done_at);
        grpc::ClientContext& context = *rec_->context;
        bool cancelled = t_->sched_->RunUntil(
            done_at, [&] { return ContextLedger::Get().IsCancelled(context); });
        if (cancelled) {
          rec_->by_cancel = true;
          rec_->by_deadline = false;
          status = grpc::Status(grpc::StatusCode::CANCELLED, "sim: cancelled");
        } else if (done_at == TimePoint::max()) {
          t_->sync_hang_ = true;
          status = grpc::Status(grpc::StatusCode::INTERNAL, "sim: sync hang");
        }
        t_->End(*rec_, status);
      }
      if (rec_->status.ok()) {
        response_->set_value(static_cast<int64_t>(rec_->writes.size()));
      }
      return SeenStatus(*rec_);
    }

   private:
    SimTransport* t_;
    AttemptRecord* rec_;
    Msg* response_;
  };

  std::unique_ptr<grpc::ClientWriterInterface<Msg>> OpenSyncWriter(
      int call, grpc::ClientContext& context, Msg* response) {
    AttemptRecord* rec = Begin(call, context);
    rec->stream = true;
    return std::make_unique<SyncWriter>(this, rec, response);
  }

  class SyncBidi final : public grpc::ClientReaderWriterInterface<Msg, Msg> {
   public:
    SyncBidi(SimTransport* t, AttemptRecord* rec) : t_(t), rec_(rec) {}
    bool Write(const Msg& msg, grpc::WriteOptions) override {
      if (!t_->WriteStep(*rec_, msg.value(), false)) return false;
      if (rec_->writes.size() == 1) next_ = msg.value() + 1;
      return true;
    }
    bool WritesDone() override { return t_->WriteStep(*rec_, 0, true); }
    bool Read(Msg* msg) override { return t_->SyncRead(*rec_, next_, msg); }
    grpc::Status Finish() override { return t_->SyncFinish(*rec_); }
    bool NextMessageSize(uint32_t* sz) override {
      *sz = 1 << 20;
      return true;
    }
    void WaitForInitialMetadata() override {}

   private:
    SimTransport* t_;
    AttemptRecord* rec_;
    int64_t next_ = 1;
  };

  std::unique_ptr<grpc::ClientReaderWriterInterface<Msg, Msg>> OpenSyncBidi(
      int call, grpc::ClientContext& context) {
    AttemptRecord* rec = Begin(call, context);
    rec->stream = true;
    return std::make_unique<SyncBidi>(this, rec);
  }

  // An async client or bidi stream. gRPC's rules, on the simulation's
  // queue: each operation's reaction comes as an event; OnReadDone(false)
  // answers the pending read when the stream ends; OnDone comes last, once
  // the stream ended, every operation reacted and every hold is gone. A
  // bidi server starts answering once the first write (or the half-close)
  // arrived; a client stream's server answers at its script's end, an OK
  // only after the half-close.
  template <typename Base, typename ReactorT, bool kBidi>
  class AsyncWriteStream final : public Base {
   public:
    AsyncWriteStream(SimTransport* t, AttemptRecord* rec, ReactorT* reactor,
                     Msg* response)
        : t_(t), rec_(rec), reactor_(reactor), response_(response) {
      this->BindReactor(reactor);
      rec_->finish = [this](grpc::Status status) { EndStream(status); };
    }
    void StartCall() override {
      started_ = true;
      if constexpr (!kBidi) {
        TimePoint at;
        grpc::Status status = t_->Planned(*rec_, &at);
        if (at != TimePoint::max()) {
          rec_->pending_event =
              t_->sched_->PostAt(at, rec_->call, [this, status] {
                rec_->pending_event = 0;
                if (status.ok() && !rec_->half_closed) {
                  answer_on_close_ = true;  // the server waits for it
                  return;
                }
                EndStream(status);
              });
        }
      }
      for (auto& op : queued_) op();
      queued_.clear();
    }
    void Write(const Msg* msg, grpc::WriteOptions) override {
      const int64_t value = msg->value();
      Op([this, value] {
        const bool ok = t_->WriteStep(*rec_, value, false);
        if (ok) BeginAnswers();
        if (!ok) EndStream(SeenStatusOrLive());
        reactor_->OnWriteDone(ok);
      });
    }
    void WritesDone() override {
      Op([this] {
        const bool ok = t_->WriteStep(*rec_, 0, true);
        if (ok) BeginAnswers();
        if (!ok) EndStream(SeenStatusOrLive());
        if (ok && answer_on_close_) EndStream(grpc::Status::OK);
        reactor_->OnWritesDoneDone(ok);
      });
    }
    // Bidi only (it overrides ClientCallbackReaderWriter::Read there). A
    // message that came while no read was pending is handed over now, as
    // is the end, each as an event.
    void Read(Msg* msg) {
      ++ops_;
      pending_read_ = msg;
      if (undelivered_.empty() && !ended_) return;
      t_->sched_->PostAt(t_->sched_->Now(), rec_->call, [this] {
        Feed();
        if constexpr (kBidi) {
          if (ended_ && pending_read_ != nullptr) {
            pending_read_ = nullptr;
            --ops_;
            reactor_->OnReadDone(false);
            MaybeDone();
          }
        }
      });
    }
    void AddHold(int holds) override { holds_ += holds; }
    void RemoveHold() override {
      --holds_;
      MaybeDone();
    }

   private:
    // A reaction, as an event (queued until StartCall).
    void Op(std::function<void()> fn) {
      ++ops_;
      auto run = [this, fn = std::move(fn)] {
        t_->sched_->PostAt(t_->sched_->Now(), rec_->call, [this, fn] {
          fn();
          --ops_;
          MaybeDone();
        });
      };
      if (started_) {
        run();
      } else {
        queued_.push_back(run);
      }
    }
    grpc::Status SeenStatusOrLive() {
      return rec_->ended ? rec_->status
                         : grpc::Status(grpc::StatusCode::CANCELLED, "sim");
    }
    void BeginAnswers() {
      if constexpr (kBidi) {
        if (answering_) return;
        answering_ = true;
        if (!rec_->writes.empty()) next_ = rec_->writes.front() + 1;
        Step();
      }
    }
    void Step() {
      TimePoint at;
      bool message = t_->NextStreamStep(*rec_, next_, &at);
      if (at == TimePoint::max()) return;  // hangs until cancelled
      rec_->pending_event =
          t_->sched_->PostAt(at, rec_->call, [this, message, at] {
            rec_->pending_event = 0;
            if (ended_) return;
            if (message) {
              t_->Deliver(*rec_);
              // The reactor reads one at a time; the sim's server waits
              // for the read (gRPC's flow control).
              undelivered_.push_back(next_++);
              Feed();
              Step();
            } else {
              EndStream(t_->StreamEndStatus(*rec_, at));
            }
          });
    }
    void Feed() {
      if constexpr (kBidi) {
        while (pending_read_ != nullptr && !undelivered_.empty()) {
          Msg* out = pending_read_;
          pending_read_ = nullptr;
          out->set_value(undelivered_.front());
          undelivered_.pop_front();
          --ops_;
          reactor_->OnReadDone(true);  // may StartRead again
        }
      }
    }
    void EndStream(grpc::Status status) {
      if (ended_) return;
      ended_ = true;
      if (rec_->pending_event != 0) t_->sched_->Remove(rec_->pending_event);
      rec_->pending_event = 0;
      if (!rec_->ended) {
        if constexpr (!kBidi) {
          if (status.ok()) {
            response_->set_value(static_cast<int64_t>(rec_->writes.size()));
          }
        }
        t_->End(*rec_, status);  // also injects the trailers
      }
      // Messages the server sent before it ended are still read first.
      Feed();
      if constexpr (kBidi) {
        if (pending_read_ != nullptr) {
          pending_read_ = nullptr;
          --ops_;
          reactor_->OnReadDone(false);
        }
      }
      MaybeDone();
    }
    void MaybeDone() {
      if (!ended_ || done_posted_ || holds_ > 0 || ops_ > 0) return;
      done_posted_ = true;
      t_->sched_->PostAt(t_->sched_->Now(), rec_->call, [this] {
        // The result is handed over now, maybe events after the end:
        // the throttle and budget as the decision sees them.
        t_->NoteHandOver(*rec_);
        // The reactor deletes itself in OnDone.
        reactor_->OnDone(SeenStatus(*rec_));
      });
    }

    SimTransport* t_;
    AttemptRecord* rec_;
    ReactorT* reactor_;
    Msg* response_;
    bool started_ = false;
    bool ended_ = false;
    bool answering_ = false;
    bool answer_on_close_ = false;
    bool done_posted_ = false;
    int holds_ = 0;
    int ops_ = 0;
    int64_t next_ = 1;
    Msg* pending_read_ = nullptr;
    std::deque<int64_t> undelivered_;
    std::vector<std::function<void()>> queued_;
  };
  using AsyncBidi = AsyncWriteStream<grpc::ClientCallbackReaderWriter<Msg, Msg>,
                                     grpc::ClientBidiReactor<Msg, Msg>, true>;
  using AsyncClient = AsyncWriteStream<grpc::ClientCallbackWriter<Msg>,
                                       grpc::ClientWriteReactor<Msg>, false>;

  absl::Status OpenAsyncBidi(int call, grpc::ClientContext& context,
                             grpc::ClientBidiReactor<Msg, Msg>* reactor) {
    AttemptRecord* rec = Begin(call, context);
    rec->stream = true;
    write_streams_.push_back(
        std::make_unique<AsyncBidi>(this, rec, reactor, nullptr));
    PollCancels();
    return absl::OkStatus();
  }
  absl::Status OpenAsyncClient(int call, grpc::ClientContext& context,
                               Msg* response,
                               grpc::ClientWriteReactor<Msg>* reactor) {
    AttemptRecord* rec = Begin(call, context);
    rec->stream = true;
    write_streams_.push_back(
        std::make_unique<AsyncClient>(this, rec, reactor, response));
    PollCancels();
    return absl::OkStatus();
  }

  // The status gRPC handed the code for an ended attempt.
  static grpc::Status SeenStatus(const AttemptRecord& rec) {
    if (rec.by_establish) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "sim: cancelled");
    }
    return rec.status;
  }

  // Runs a stream's establishment timer's `fire` (it cancels its attempt's
  // context) and marks the attempt it cancelled.
  void FireEstablishTimer(const std::function<void()>& fire) {
    std::vector<AttemptRecord*> live;
    for (auto& [call, state] : calls_) {
      for (auto& rec : state.attempts) {
        if (!rec->ended && rec->context != nullptr &&
            !ContextLedger::Get().IsCancelled(*rec->context)) {
          live.push_back(rec.get());
        }
      }
    }
    fire();
    for (AttemptRecord* rec : live) {
      if (!rec->ended && rec->context != nullptr &&
          ContextLedger::Get().IsCancelled(*rec->context)) {
        rec->by_establish = true;
        rec->establish_fired = sched_->Now();
      }
    }
  }

  // Completes, with CANCELLED, every live attempt whose context was
  // cancelled.
  void PollCancels() {
    for (auto& [call, state] : calls_) {
      for (auto& rec : state.attempts) {
        if (rec->ended || rec->context == nullptr || rec->cancel_posted ||
            !rec->finish)
          continue;
        if (!ContextLedger::Get().IsCancelled(*rec->context)) continue;
        if (rec->pending_event != 0) sched_->Remove(rec->pending_event);
        rec->pending_event = 0;
        rec->cancel_posted = true;
        AttemptRecord* r = rec.get();
        sched_->PostAt(sched_->Now(), r->call, [this, r] {
          r->by_cancel = true;
          Complete(*r,
                   grpc::Status(grpc::StatusCode::CANCELLED, "sim: cancelled"));
        });
      }
    }
  }

 private:
  struct CallState {
    std::vector<AttemptScript> scripts;
    std::vector<TimePoint> snap_points;
    std::vector<nanoseconds> snap_durations;
    int stream_total = 0;
    std::function<AttemptScript(int)> source;  // when set, not `scripts`
    std::vector<std::unique_ptr<AttemptRecord>> attempts;
  };

  AttemptRecord* Begin(int call, grpc::ClientContext& context) {
    CallState& state = calls_[call];
    auto rec = std::make_unique<AttemptRecord>();
    rec->call = call;
    rec->index = static_cast<int>(state.attempts.size());
    if (state.source) {
      rec->script = state.source(rec->index);
    } else if (rec->index < static_cast<int>(state.scripts.size())) {
      rec->script = state.scripts[rec->index];
    } else {
      rec->script = AttemptScript{};  // OK at once, all messages
      rec->script.latency = milliseconds(0);
      rec->script.messages = 1 << 20;
    }
    rec->start = sched_->Now();
    if (order_ != nullptr) rec->start_order = ++*order_;
    rec->context = &context;
    auto wall = context.deadline();
    if (wall != std::chrono::system_clock::time_point::max()) {
      // Whole milliseconds, rounded up: the loop set `deadline` from the
      // fake clock a few microseconds of real time ago.
      auto remaining = std::chrono::duration_cast<nanoseconds>(
          wall - std::chrono::system_clock::now());
      rec->deadline = Snap(state, rec->start, remaining);
    }
    AttemptRecord* raw = rec.get();
    state.attempts.push_back(std::move(rec));
    return raw;
  }

  // The fake-clock image of an attempt's deadline, `remaining` from now by
  // the wall clock. The code computed it from the fake clock and handed it
  // over through the wall clock, so it arrives short by the real time in
  // between (microseconds; milliseconds on a loaded machine): snap it to
  // the limit it was meant to be, when one is just above.
  // The drift allowed is generous: on a loaded 2-core machine (a Bazel
  // fastbuild beside other builds) a thread can lose tens of milliseconds
  // between the two clock reads, and 25 ms once turned a 30 ms attempt
  // timeout into an instant DEADLINE_EXCEEDED (seed 9979, not replayable).
  // The earliest limit at or above `remaining` is still the one chosen, and
  // an attempt's deadline is the earliest of its limits.
  TimePoint Snap(const CallState& state, TimePoint now, nanoseconds remaining) {
    constexpr nanoseconds kDrift = milliseconds(250);
    std::vector<TimePoint> candidates = state.snap_points;
    for (nanoseconds d : state.snap_durations) {
      candidates.push_back(AddSat(now, d));
    }
    TimePoint best = TimePoint::max();
    for (TimePoint c : candidates) {
      nanoseconds meant = c <= now ? nanoseconds(0) : c - now;
      if (remaining <= meant + microseconds(100) &&
          meant - remaining <= kDrift && c < best) {
        best = c;
      }
    }
    if (best != TimePoint::max()) return best < now ? now : best;
    int64_t ms = std::chrono::ceil<milliseconds>(remaining).count();
    return AddSat(now, milliseconds(std::max<int64_t>(0, ms)));
  }

  // Unary: the planned result and when it arrives (max(): never).
  grpc::Status Planned(AttemptRecord& rec, TimePoint* at) {
    const AttemptScript& s = rec.script;
    TimePoint natural = s.kind == AttemptScript::Kind::kHang
                            ? TimePoint::max()
                            : AddSat(rec.start, s.latency);
    if (rec.deadline != TimePoint::max() && rec.deadline <= natural) {
      *at = rec.deadline;
      rec.by_deadline = true;
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          "sim: deadline exceeded");
    }
    *at = natural;
    if (s.kind == AttemptScript::Kind::kOk) return grpc::Status::OK;
    return FailureStatus(s);
  }

  grpc::Status FailureStatus(const AttemptScript& s) {
    std::string details;
    if (s.retry_info != InfoHint::kNone) {
      details = SerializedStatusWithRetryInfo(s.retry_info, s.retry_info_ms);
    }
    return grpc::Status(s.code, "sim: scripted failure", details);
  }

  // Streams: the next step from `next_value` on. True: a message at `*at`;
  // false: the end (or the hang, `*at` = deadline or max()).
  bool NextStreamStep(AttemptRecord& rec, int64_t next_value, TimePoint* at) {
    const AttemptScript& s = rec.script;
    const CallState& state = calls_[rec.call];
    TimePoint last = rec.messages == 0 ? rec.start : rec.last_step;
    const bool more_data = next_value <= state.stream_total;
    const int limit =
        s.kind == AttemptScript::Kind::kOk ? (1 << 30) : s.messages;
    const bool message = more_data && rec.messages < limit;
    TimePoint next = AddSat(last, s.latency);
    // A hang sends its messages, then nothing until cancelled.
    if (!message && s.kind == AttemptScript::Kind::kHang) {
      next = TimePoint::max();
    }
    if (rec.deadline != TimePoint::max() && rec.deadline <= next) {
      *at = rec.deadline;
      rec.by_deadline = true;
      return false;
    }
    *at = next;
    if (message) rec.last_step = next;
    return message;
  }

  grpc::Status StreamEndStatus(AttemptRecord& rec, TimePoint /*at*/) {
    if (rec.by_deadline) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                          "sim: deadline exceeded");
    }
    if (rec.script.kind == AttemptScript::Kind::kOk) return grpc::Status::OK;
    return FailureStatus(rec.script);
  }

  void Deliver(AttemptRecord& rec) {
    if (rec.messages == 0) rec.first_message = sched_->Now();
    ++rec.messages;
  }

  void End(AttemptRecord& rec, grpc::Status status) {
    rec.ended = true;
    if (order_ != nullptr) rec.end_order = ++*order_;
    rec.end = sched_->Now();
    if (rec.by_establish && rec.by_cancel) {
      rec.by_cancel = false;
      rec.by_deadline = true;
      // When the timer fired: a sync reader may see the cancel later, once
      // an inline-fired wait of another call has moved the clock on.
      rec.deadline = rec.establish_fired;
      status = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                            "sim: no response within the attempt timeout");
    } else {
      rec.by_establish = false;  // ended otherwise before its cancel landed
    }
    rec.status = status;
    if (!status.ok() && !rec.by_cancel && !rec.by_deadline) {
      const AttemptScript& s = rec.script;
      if (s.pushback != Hint::kNone) {
        rec.trailer_key = "grpc-retry-pushback-ms";
        switch (s.pushback) {
          case Hint::kValid:
            rec.trailer_value = std::to_string(s.pushback_ms);
            break;
          case Hint::kNegative:
            rec.trailer_value = "-" + std::to_string(s.pushback_ms + 1);
            break;
          case Hint::kGarbage:
            rec.trailer_value = "12ms";
            break;
          case Hint::kHuge:
            rec.trailer_value = "999999999999999999";
            break;
          case Hint::kNone:
            break;
        }
        ContextLedger::Get().AddTrailer(*rec.context, rec.trailer_key,
                                        rec.trailer_value);
      }
    }
    NoteHandOver(rec);
    rec.context = nullptr;
  }

  // The throttle's bucket and the budget when the attempt's result is
  // handed to the code under test.
  void NoteHandOver(AttemptRecord& rec) {
    if (throttle_milli_) rec.throttle_milli_before = throttle_milli_();
    if (budget_admits_) rec.budget_admits_before = budget_admits_();
  }

  void Complete(AttemptRecord& rec, grpc::Status status) {
    if (rec.ended) return;
    if (rec.by_cancel) rec.by_deadline = false;
    std::function<void(grpc::Status)> finish = std::move(rec.finish);
    // End() for unary here; the stream reader's EndStream calls it itself.
    if (!rec.stream) {
      End(rec, status);
      finish(status);
    } else {
      finish(status);
    }
  }

  SimScheduler* sched_;
  std::function<int64_t()> throttle_milli_;
  std::function<int()> budget_admits_;
  uint64_t* order_ = nullptr;
  std::map<int, CallState> calls_;
  std::condition_variable remote_cv_;  // with the world mutex
  std::vector<std::unique_ptr<AsyncReader>> readers_;
  // Client and bidi streams' fakes (AsyncWriteStream).
  std::vector<std::shared_ptr<void>> write_streams_;
  bool sync_hang_ = false;
};

// The streams' establishment timer (internal::EstablishTimerOption) on the
// simulation's clock: it fires as an event, never inside `Schedule` (it is
// started before its attempt), and the transport marks the attempt it
// cancels.
class SimEstablishTimer final : public AsyncSleeper {
 public:
  SimEstablishTimer(SimScheduler* scheduler, SimTransport* transport)
      : sched_(scheduler), transport_(transport) {}
  uint64_t Schedule(nanoseconds duration,
                    std::function<void(bool)> done) override {
    return sched_->ScheduleQueued(
        duration, [transport = transport_, done = std::move(done)](bool fired) {
          if (!fired) return done(false);
          transport->FireEstablishTimer([&] { done(true); });
        });
  }
  void Cancel(uint64_t id) override { sched_->CancelQueued(id); }

 private:
  SimScheduler* sched_;
  SimTransport* transport_;
};

}  // namespace sim
}  // namespace stubkit

#endif  // STUBKIT_TESTS_SIMULATION_SIM_FAKES_H_
