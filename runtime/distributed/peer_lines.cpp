#include "distributed/peer_lines.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <charconv>

namespace mgpr::runtime {
namespace {

// What a line carries, each a text line: "rank R" once connected, "bye" on leaving.
constexpr std::string_view kRankWord = "rank ";
constexpr std::string_view kGoodbye = "bye";
// A peer says no more than these; anything longer is not one of ours.
constexpr std::size_t kLongestMessage = 32;

int listening_socket(int family) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int no = 0;
  // One socket for the ranks that reach rank 0 over IPv4 and over IPv6.
  if (family == AF_INET6) (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
  sockaddr_storage address{};
  socklen_t length = 0;
  if (family == AF_INET6) {
    auto& any = reinterpret_cast<sockaddr_in6&>(address);
    any.sin6_family = AF_INET6;
    any.sin6_addr = in6addr_any;
    length = sizeof any;
  } else {
    auto& any = reinterpret_cast<sockaddr_in&>(address);
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    length = sizeof any;
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6&>(address).sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in&>(address).sin_port);
}

// Connects within `timeout`; -1 when it could not.
int connect_within(const addrinfo& address, std::chrono::milliseconds timeout) {
  const int fd = ::socket(address.ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, address.ai_addr, address.ai_addrlen) != 0) {
    pollfd pending{fd, POLLOUT, 0};
    int error = errno;
    if (error == EINPROGRESS && ::poll(&pending, 1, static_cast<int>(timeout.count())) == 1) {
      socklen_t length = sizeof error;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
    }
    if (error != 0) {
      ::close(fd);
      return -1;
    }
  }
  return fd;
}

bool send_text(int fd, std::string_view text) {
  return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
}

}  // namespace

Rank0Lines::Rank0Lines() {
  listener_ = listening_socket(AF_INET6);
  if (listener_ < 0) listener_ = listening_socket(AF_INET);
  if (listener_ >= 0) port_ = bound_port(listener_);
}

Rank0Lines::~Rank0Lines() {
  for (const auto& line : lines_) ::close(line.fd);
  if (listener_ >= 0) ::close(listener_);
}

void Rank0Lines::accept_lines() {
  for (int fd = 0; (fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
    lines_.push_back({fd, -1, {}, false});
  }
}

bool Rank0Lines::read_line(Line& line, std::vector<int>& closed) {
  std::array<char, kLongestMessage> buffer{};
  while (true) {
    const auto got = ::recv(line.fd, buffer.data(), buffer.size(), 0);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      // The peer's process ended (its kernel closed the line), or the connection broke.
      if (line.rank >= 0 && !line.left) closed.push_back(line.rank);
      return false;
    }
    line.pending.append(buffer.data(), static_cast<std::size_t>(got));
    for (auto end = line.pending.find('\n'); end != std::string::npos; end = line.pending.find('\n')) {
      const std::string_view message(line.pending.data(), end);
      if (message == kGoodbye) {
        line.left = true;
      } else if (message.starts_with(kRankWord)) {
        const auto digits = message.substr(kRankWord.size());
        int rank = -1;
        const auto [last, error] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
        if (error == std::errc() && last == digits.data() + digits.size() && rank > 0) line.rank = rank;
      }
      line.pending.erase(0, end + 1);
    }
    if (line.pending.size() > kLongestMessage) return false;  // not one of ours
  }
}

std::vector<int> Rank0Lines::closed_without_goodbye(std::chrono::milliseconds wait) {
  std::vector<int> closed;
  if (listener_ < 0) {
    ::usleep(static_cast<useconds_t>(std::chrono::microseconds(wait).count()));
    return closed;
  }
  std::vector<pollfd> watched{{listener_, POLLIN, 0}};
  for (const auto& line : lines_) watched.push_back({line.fd, POLLIN, 0});
  if (::poll(watched.data(), watched.size(), static_cast<int>(wait.count())) <= 0) return closed;
  std::vector<Line> kept;
  for (std::size_t i = 0; i < lines_.size(); ++i) {
    auto& line = lines_[i];
    if (watched[i + 1].revents == 0 || read_line(line, closed)) {
      kept.push_back(std::move(line));
    } else {
      ::close(line.fd);
    }
  }
  lines_ = std::move(kept);
  if ((watched[0].revents & POLLIN) != 0) accept_lines();
  return closed;
}

LineToRank0::LineToRank0(const std::string& host, int port, int rank, std::chrono::milliseconds connect_timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
  for (const addrinfo* address = found; address != nullptr && fd_ < 0; address = address->ai_next) {
    fd_ = connect_within(*address, connect_timeout);
  }
  ::freeaddrinfo(found);
  if (fd_ >= 0 && !send_text(fd_, fmt::format("{}{}\n", kRankWord, rank))) {
    ::close(fd_);
    fd_ = -1;
  }
}

LineToRank0::~LineToRank0() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineToRank0::rank0_closed(std::chrono::milliseconds wait) {
  if (fd_ < 0) return false;
  pollfd watched{fd_, POLLIN, 0};
  if (::poll(&watched, 1, static_cast<int>(wait.count())) <= 0) return false;
  std::array<char, kLongestMessage> buffer{};
  const auto got = ::recv(fd_, buffer.data(), buffer.size(), 0);
  if (got > 0) return false;  // rank 0 says nothing on the line; not ours to read
  return got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void LineToRank0::goodbye() {
  if (fd_ < 0) return;
  (void)send_text(fd_, fmt::format("{}\n", kGoodbye));
  ::close(fd_);
  fd_ = -1;
}

}  // namespace mgpr::runtime
