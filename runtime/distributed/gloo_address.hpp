#pragma once
// Which of this host's addresses Gloo listens on, so the other ranks can reach it, and
// the same choice for NCCL's sockets (its bootstrap and, without InfiniBand, its data).
#include <optional>
#include <string>
#include <vector>

namespace mgpr::runtime {

// 127.0.0.1 when rank 0 is on a loopback address; otherwise the address of the
// interface that routes to rank 0 (`master_addr`:`port`), which the other nodes can
// reach too, unlike the host name (Debian maps it to 127.0.1.1). Nullopt when there is
// no route: Gloo's own default then.
std::optional<std::string> address_towards(const std::string& master_addr, int port);

struct NetworkInterface {
  std::string name;     // "eth0"
  std::string address;  // "10.1.2.3"
};

// The value for NCCL_SOCKET_IFNAME, or nullopt to leave it alone: the user's own
// `nccl_ifname` always wins; else GLOO_SOCKET_IFNAME's first interface, as Gloo takes it;
// else the interface that holds `address` (address_towards's choice). "=" makes NCCL
// match the name exactly (eth1 would otherwise match eth10 too). Left alone when
// nothing matches: NCCL's own choice then, which skips loopback and docker bridges.
std::optional<std::string> nccl_socket_ifname(const char* nccl_ifname, const char* gloo_ifname,
                                              const std::optional<std::string>& address,
                                              const std::vector<NetworkInterface>& interfaces);

// This host's interfaces that are up, with their IPv4 and IPv6 addresses.
std::vector<NetworkInterface> network_interfaces();

// Sets NCCL_SOCKET_IFNAME from nccl_socket_ifname before NCCL first reads it (it reads
// its environment once per process). Returns the value set, if any.
std::optional<std::string> steer_nccl_interface(const std::string& master_addr, int port);

}  // namespace mgpr::runtime
