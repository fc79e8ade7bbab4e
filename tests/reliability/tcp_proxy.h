// Copyright 2026 The stubkit Authors.
//
// TcpProxy: a small TCP proxy on 127.0.0.1 for fault injection, with real
// sockets. Clients connect to the proxy's port; it forwards each connection
// to the upstream port, and on command:
//
//   proxy.DropAll();                  // resets every open connection
//                                     // (mid-call: the client sees it break)
//   proxy.RefuseFor(500ms);           // new connections are reset at once
//   proxy.SetLatency(20ms);           // each forwarded chunk waits first
//
// One thread accepts; one thread per connection pumps both directions with
// poll(2). Everything stops in the destructor.

#ifndef STUBKIT_TESTS_RELIABILITY_TCP_PROXY_H_
#define STUBKIT_TESTS_RELIABILITY_TCP_PROXY_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <list>
#include <set>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace stubkit {
namespace reliability {

// Closes `fd` with a TCP reset rather than an orderly FIN.
inline void ResetAndClose(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

inline int ListenOnLoopback(int port, int* bound_port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return -1;
  }
  *bound_port = ntohs(addr.sin_port);
  return fd;
}

// A port that was free a moment ago (the kernel picked it).
inline int PickFreePort() {
  int port = 0;
  int fd = ListenOnLoopback(0, &port);
  if (fd < 0) return 0;
  close(fd);
  return port;
}

class TcpProxy {
 public:
  explicit TcpProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ListenOnLoopback(0, &port_);
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~TcpProxy() {
    stop_ = true;
    if (write(wake_[1], "x", 1) < 0) {
    }
    accept_thread_.join();
    DropAll();
    std::list<std::thread> pumps;
    {
      absl::MutexLock lock(&mu_);
      pumps.swap(pumps_);
    }
    for (auto& t : pumps) t.join();
    close(listen_fd_);
    close(wake_[0]);
    close(wake_[1]);
  }

  bool ok() const { return listen_fd_ >= 0 && wake_[0] >= 0; }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Resets every open connection, client side and server side.
  void DropAll() {
    absl::MutexLock lock(&mu_);
    for (int fd : open_fds_) {
      linger l{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
      shutdown(fd, SHUT_RDWR);
    }
    drops_ += static_cast<int>(open_fds_.size() / 2);
  }
  // New connections are reset at once until `duration` has passed.
  void RefuseFor(std::chrono::milliseconds duration) {
    refuse_until_ns_ = Now() + duration.count() * 1000000;
  }
  void SetLatency(std::chrono::milliseconds latency) {
    latency_ms_ = static_cast<int>(latency.count());
  }

  int connections() const { return connections_; }
  int refused() const { return refused_; }
  int drops() {
    absl::MutexLock lock(&mu_);
    return drops_;
  }

 private:
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  void AcceptLoop() {
    while (!stop_) {
      pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (poll(fds, 2, 100) <= 0 || !(fds[0].revents & POLLIN)) continue;
      int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      if (Now() < refuse_until_ns_) {
        ++refused_;
        ResetAndClose(client);
        continue;
      }
      int upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
      if (upstream < 0 || connect(upstream, reinterpret_cast<sockaddr*>(&addr),
                                  sizeof(addr)) != 0) {
        ++refused_;
        if (upstream >= 0) close(upstream);
        ResetAndClose(client);
        continue;
      }
      int one = 1;
      setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(upstream, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ++connections_;
      absl::MutexLock lock(&mu_);
      open_fds_.insert(client);
      open_fds_.insert(upstream);
      pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
    }
  }

  // Forwards both ways until either side closes or breaks, then resets both.
  void Pump(int a, int b) {
    char buffer[16384];
    while (!stop_) {
      pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (poll(fds, 2, 100) < 0) break;
      bool done = false;
      for (int i = 0; i < 2 && !done; ++i) {
        if (fds[i].revents == 0) continue;
        ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
        if (n <= 0) {
          done = true;
          break;
        }
        int latency = latency_ms_;
        if (latency > 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(latency));
        }
        int to = i == 0 ? b : a;
        for (ssize_t sent = 0; sent < n;) {
          ssize_t w = send(to, buffer + sent, n - sent, MSG_NOSIGNAL);
          if (w <= 0) {
            done = true;
            break;
          }
          sent += w;
        }
      }
      if (done) break;
    }
    absl::MutexLock lock(&mu_);
    open_fds_.erase(a);
    open_fds_.erase(b);
    ResetAndClose(a);
    ResetAndClose(b);
  }

  const int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> refuse_until_ns_{0};
  std::atomic<int> latency_ms_{0};
  std::atomic<int> connections_{0};
  std::atomic<int> refused_{0};
  std::thread accept_thread_;

  absl::Mutex mu_;
  std::set<int> open_fds_ ABSL_GUARDED_BY(mu_);
  std::list<std::thread> pumps_ ABSL_GUARDED_BY(mu_);
  int drops_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace reliability
}  // namespace stubkit

#endif  // STUBKIT_TESTS_RELIABILITY_TCP_PROXY_H_
