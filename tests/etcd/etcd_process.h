// Copyright 2026 The stubkit Authors.
//
// EtcdProcess: runs Debian's etcd (scripts/install-etcd.sh) as a child
// process, a one-member cluster on 127.0.0.1 with client and peer ports
// picked when it first starts and a temporary data directory, and kills it
// with SIGKILL and restarts it on the same ports and data directory:
//
//   std::string binary = stubkit::etcd::FindEtcdBinary();
//   if (binary.empty()) GTEST_SKIP() << "etcd is not installed: ...";
//   stubkit::etcd::EtcdProcess etcd(binary);
//   ASSERT_TRUE(etcd.Start()) << etcd.error();  // waits until it serves
//   etcdserverpb::KVClient client(
//       stubkit::CreateChannel(etcd.address(), ...));
//   etcd.Kill();                                 // a crash: SIGKILL
//   ASSERT_TRUE(etcd.Start()) << etcd.error();   // same ports, same data
//   etcd.served_at();                            // when it served again
//
// "Serves" means a raw gRPC KV.Range succeeded on a fresh channel of its own
// (its own subchannel pool: no connection or backoff state shared with the
// clients under test), polled every 10 ms.
//
// It kills only the process it started (by pid), and the destructor kills
// it and removes the directory, also when a test fails (ASSERT returns, the
// fixture is destroyed). If the test process itself dies, the kernel kills
// etcd (PR_SET_PDEATHSIG) - which fires when the *thread* that called
// Start() exits, so call Start() from a thread that outlives the server
// (the test's main thread).

#ifndef STUBKIT_TESTS_ETCD_ETCD_PROCESS_H_
#define STUBKIT_TESTS_ETCD_ETCD_PROCESS_H_

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace stubkit {
namespace etcd {

// The etcd binary: $STUBKIT_ETCD_BINARY, else `etcd` on the PATH; empty
// when neither is an executable file.
inline std::string FindEtcdBinary() {
  auto executable = [](const std::string& path) {
    struct stat st;
    return !path.empty() && stat(path.c_str(), &st) == 0 &&
           S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
  };
  if (const char* env = std::getenv("STUBKIT_ETCD_BINARY")) {
    return executable(env) ? env : "";
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && executable(dir + "/etcd")) return dir + "/etcd";
  }
  return "";
}

// A 127.0.0.1 port the kernel picked and that was free a moment ago.
inline int PickLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// One raw KV.Range on a fresh channel with its own subchannel pool, so that
// it neither uses nor disturbs another channel's connection. True when etcd
// answered OK within `timeout`.
inline bool ProbeServes(const std::string& address,
                        std::chrono::milliseconds timeout) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  auto channel = grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args);
  auto stub = etcdserverpb::KV::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  etcdserverpb::RangeRequest request;
  request.set_key("stubkit-probe");
  etcdserverpb::RangeResponse response;
  return stub->Range(&context, request, &response).ok();
}

class EtcdProcess {
 public:
  using Clock = std::chrono::steady_clock;

  explicit EtcdProcess(std::string binary) : binary_(std::move(binary)) {}
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;
  ~EtcdProcess() {
    Kill();
    if (!dir_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  // Starts etcd (the first time: picks the ports and makes the directory)
  // and waits until it serves, at most `timeout`. False, with error(), when
  // it exited or did not serve in time; it is then killed.
  bool Start(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    if (pid_ > 0) return Fail("already running");
    if (dir_.empty() && !Prepare()) return false;
    Clock::time_point deadline = Clock::now() + timeout;
    // A port just released by the killed process is normally free at once
    // (etcd's listeners set SO_REUSEADDR); retry a few times if not.
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (!Spawn()) return false;
      started_at_ = Clock::now();
      while (Clock::now() < deadline) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;  // it exited: try again, then report its log
        }
        if (ProbeServes(address(), std::chrono::milliseconds(200))) {
          served_at_ = Clock::now();
          ++starts_;
          return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (pid_ > 0) {
        Kill();
        return Fail("did not serve within the timeout; log:\n" + LogTail());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return Fail("exited at start; log:\n" + LogTail());
  }

  // SIGKILL, then reaps it. A no-op when not running.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    killed_at_ = Clock::now();
    ++kills_;
  }

  bool running() const { return pid_ > 0; }
  // "127.0.0.1:<client port>", for gRPC channels.
  std::string address() const {
    return "127.0.0.1:" + std::to_string(client_port_);
  }
  int client_port() const { return client_port_; }
  int peer_port() const { return peer_port_; }
  const std::string& data_dir() const { return data_dir_; }
  // When the last Start() spawned the process, and when it first served.
  Clock::time_point started_at() const { return started_at_; }
  Clock::time_point served_at() const { return served_at_; }
  Clock::time_point killed_at() const { return killed_at_; }
  int starts() const { return starts_; }
  int kills() const { return kills_; }
  const std::string& error() const { return error_; }

  // The last `bytes` of etcd's stdout and stderr (all runs, appended).
  std::string LogTail(size_t bytes = 2000) const {
    std::ifstream in(log_path_);
    std::string log((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
    return log.size() > bytes ? log.substr(log.size() - bytes) : log;
  }

 private:
  bool Fail(std::string message) {
    error_ = "etcd (" + binary_ + "): " + message;
    return false;
  }

  bool Prepare() {
    std::string base = "/tmp";
    if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp) {
      base = tmp;
    }
    std::string pattern = base + "/stubkit-etcd-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) == nullptr) {
      return Fail("mkdtemp(" + pattern + ") failed");
    }
    dir_ = buffer.data();
    data_dir_ = dir_ + "/data";
    log_path_ = dir_ + "/etcd.log";
    client_port_ = PickLoopbackPort();
    peer_port_ = PickLoopbackPort();
    while (peer_port_ == client_port_ && peer_port_ != 0) {
      peer_port_ = PickLoopbackPort();
    }
    if (client_port_ == 0 || peer_port_ == 0) return Fail("no free port");
    return true;
  }

  bool Spawn() {
    const std::string client_url =
        "http://127.0.0.1:" + std::to_string(client_port_);
    const std::string peer_url =
        "http://127.0.0.1:" + std::to_string(peer_port_);
    // Everything the child needs is built before fork(): after it, only
    // async-signal-safe calls (the parent has gRPC's threads).
    std::vector<std::string> args = {
        binary_,
        "--name=stubkit",
        "--data-dir=" + data_dir_,
        "--listen-client-urls=" + client_url,
        "--advertise-client-urls=" + client_url,
        "--listen-peer-urls=" + peer_url,
        "--initial-advertise-peer-urls=" + peer_url,
        "--initial-cluster=stubkit=" + peer_url,
        "--initial-cluster-state=new",
        "--initial-cluster-token=stubkit-test",
        "--log-level=warn",
    };
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int log_fd = open(log_path_.c_str(),
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return Fail("cannot open " + log_path_);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
      close(log_fd);
      return Fail("fork failed");
    }
    if (pid == 0) {
      // Killed with us if we die without running the destructor.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(126);
      int null_fd = open("/dev/null", O_RDONLY);
      if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(log_fd);
    pid_ = pid;
    return true;
  }

  std::string binary_;
  std::string dir_;
  std::string data_dir_;
  std::string log_path_;
  int client_port_ = 0;
  int peer_port_ = 0;
  pid_t pid_ = -1;
  Clock::time_point started_at_{};
  Clock::time_point served_at_{};
  Clock::time_point killed_at_{};
  int starts_ = 0;
  int kills_ = 0;
  std::string error_;
};

}  // namespace etcd
}  // namespace stubkit

#endif  // STUBKIT_TESTS_ETCD_ETCD_PROCESS_H_
