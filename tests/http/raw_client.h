// A raw loopback HTTP/1.1 client for the server tests (tests/http, tests/serve): bytes in,
// Content-Length framed responses out, nothing hidden, every wait bounded.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace dialtree::testing {

/// A parsed response as the raw client read it.
struct Reply {
  int status = 0;  ///< 0 = the connection closed before a whole response
  std::string head, body;
};

/// A raw loopback TCP client: bytes in, responses out, nothing hidden.
class Raw {
 public:
  /// `receive_buffer` > 0 sets SO_RCVBUF before connecting: a client that reads slowly.
  explicit Raw(int port, int receive_buffer = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket");
    if (receive_buffer > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect");
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Raw() { close(); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  /// Sends every byte; false if the peer has closed.
  bool send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  /// Reads one response (Content-Length framed), waiting at most `timeout`. `head_only`: the
  /// answer to a HEAD, whose Content-Length describes a body that is not sent.
  Reply read(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000),
             bool head_only = false) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Reply r;
    std::size_t head_end;
    while ((head_end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill(deadline)) return r;
    }
    r.head = pending_.substr(0, head_end + 4);
    r.status = std::stoi(r.head.substr(9, 3));
    std::size_t length = 0;
    std::string lower_head = r.head;
    std::transform(lower_head.begin(), lower_head.end(), lower_head.begin(), ::tolower);
    const auto cl = lower_head.find("content-length:");
    if (cl != std::string::npos && !head_only) length = std::stoul(r.head.substr(cl + 15));
    while (pending_.size() < head_end + 4 + length) {
      if (!fill(deadline)) return Reply{};
    }
    r.body = pending_.substr(head_end + 4, length);
    pending_.erase(0, head_end + 4 + length);
    return r;
  }

  /// Bytes received and not yet read as a response (e.g. a body sent after a HEAD's headers).
  std::size_t unread() const { return pending_.size(); }

  /// True if the server closes the connection within `timeout` (nothing left to read).
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!fill(deadline)) return eof_;
    }
    return false;
  }

 private:
  // Appends what arrives before `deadline`; false on EOF, error or timeout.
  bool fill(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    pending_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool eof_ = false;
  std::string pending_;
};

}  // namespace dialtree::testing
