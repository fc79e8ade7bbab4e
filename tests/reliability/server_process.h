// Copyright 2026 The stubkit Authors.
//
// ServerProcess: runs tests/reliability/ledger_server in a child process on a
// fixed 127.0.0.1 port, and kills and restarts it on the same port.
//
//   ServerProcess server(STUBKIT_LEDGER_SERVER, port, ledger_path);
//   ASSERT_TRUE(server.Start());   // waits for "READY"
//   server.Kill();                 // SIGKILL: a crash, not a shutdown
//   ASSERT_TRUE(server.Start());   // same port, same ledger
//
// ReadLedger() parses the ledger file the server appends to.

#ifndef STUBKIT_TESTS_RELIABILITY_SERVER_PROCESS_H_
#define STUBKIT_TESTS_RELIABILITY_SERVER_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <thread>

namespace stubkit {
namespace reliability {

class ServerProcess {
 public:
  ServerProcess(std::string binary, int port, std::string ledger)
      : binary_(std::move(binary)), port_(port), ledger_(std::move(ledger)) {}
  ~ServerProcess() { Kill(); }

  // Starts the server and waits until it serves. Retries a few times while
  // the port is still held by the process just killed.
  bool Start() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      int status = StartOnce();
      if (status == 0) return true;
      if (status != 3) return false;  // 3: port busy, try again
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    ++kills_;
  }

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  int kills() const { return kills_; }

 private:
  // 0 when ready; the child's exit code when it failed.
  int StartOnce() {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return -1;
    std::string port_flag = "--port=" + std::to_string(port_);
    std::string ledger_flag = "--ledger=" + ledger_;
    pid_t pid = fork();
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      execl(binary_.c_str(), binary_.c_str(), port_flag.c_str(),
            ledger_flag.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    std::string seen;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool ready = false;
    while (!ready && std::chrono::steady_clock::now() < deadline) {
      pollfd fd{out[0], POLLIN, 0};
      if (poll(&fd, 1, 100) <= 0) continue;
      char buffer[256];
      ssize_t n = read(out[0], buffer, sizeof(buffer));
      if (n <= 0) break;  // the child exited
      seen.append(buffer, n);
      ready = seen.find("READY") != std::string::npos;
    }
    close(out[0]);
    if (ready) {
      pid_ = pid;
      return 0;
    }
    int status = 0;
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string binary_;
  int port_;
  std::string ledger_;
  pid_t pid_ = -1;
  int kills_ = 0;
};

struct LedgerFile {
  std::map<std::string, int> appends;     // op_id -> times applied
  std::map<std::string, int> puts;        // key -> times applied
  std::map<std::string, std::string> values;  // key -> last value
  int total_appends = 0;
};

inline LedgerFile ReadLedger(const std::string& path) {
  LedgerFile ledger;
  std::ifstream in(path);
  std::string kind, a, b;
  while (in >> kind) {
    if (kind == "P" && in >> a >> b) {
      ++ledger.puts[a];
      ledger.values[a] = b;
    } else if (kind == "A" && in >> a) {
      ++ledger.appends[a];
      ++ledger.total_appends;
    }
  }
  return ledger;
}

}  // namespace reliability
}  // namespace stubkit

#endif  // STUBKIT_TESTS_RELIABILITY_SERVER_PROCESS_H_
