#include "distributed/gloo_address.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

namespace mgpr::runtime {
namespace {

bool is_loopback(const std::string& address) {
  return address == "localhost" || address.starts_with("127.") || address == "::1";
}

std::optional<std::string> text_of(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = address->sa_family == AF_INET6
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(address)->sin_addr);
  if (::inet_ntop(address->sa_family, raw, text, sizeof(text)) == nullptr) return std::nullopt;
  return std::string(text);
}

// A UDP connect sends nothing; it only chooses the route.
std::optional<std::string> local_address_towards(const std::string& master_addr, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(master_addr.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return std::nullopt;
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
  const int fd = ::socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  if (::connect(fd, found->ai_addr, found->ai_addrlen) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    out = text_of(reinterpret_cast<const sockaddr*>(&local));
  }
  ::close(fd);
  return out;
}

}  // namespace

std::optional<std::string> address_towards(const std::string& master_addr, int port) {
  if (is_loopback(master_addr)) return "127.0.0.1";
  return local_address_towards(master_addr, port);
}

std::optional<std::string> nccl_socket_ifname(const char* nccl_ifname, const char* gloo_ifname,
                                              const std::optional<std::string>& address,
                                              const std::vector<NetworkInterface>& interfaces) {
  if (nccl_ifname != nullptr && *nccl_ifname != '\0') return std::nullopt;
  if (gloo_ifname != nullptr && *gloo_ifname != '\0') {
    const std::string first = std::string(gloo_ifname).substr(0, std::string(gloo_ifname).find(','));
    if (!first.empty()) return "=" + first;
  }
  if (!address) return std::nullopt;
  for (const auto& interface : interfaces) {
    if (interface.address == *address) return "=" + interface.name;
  }
  return std::nullopt;
}

std::vector<NetworkInterface> network_interfaces() {
  std::vector<NetworkInterface> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  const std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> guard(list, &::freeifaddrs);
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || (entry->ifa_flags & IFF_UP) == 0) continue;
    if (entry->ifa_addr->sa_family != AF_INET && entry->ifa_addr->sa_family != AF_INET6) continue;
    if (auto text = text_of(entry->ifa_addr)) out.push_back({entry->ifa_name, std::move(*text)});
  }
  return out;
}

std::optional<std::string> steer_nccl_interface(const std::string& master_addr, int port) {
  auto chosen = nccl_socket_ifname(std::getenv("NCCL_SOCKET_IFNAME"), std::getenv("GLOO_SOCKET_IFNAME"),
                                   address_towards(master_addr, port), network_interfaces());
  if (chosen) ::setenv("NCCL_SOCKET_IFNAME", chosen->c_str(), 0);
  return chosen;
}

}  // namespace mgpr::runtime
