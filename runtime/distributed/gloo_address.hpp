#pragma once
// Which of this host's addresses Gloo listens on, so the other ranks can reach it.
#include <optional>
#include <string>

namespace mgpr::runtime {

// 127.0.0.1 when rank 0 is on a loopback address; otherwise the address of the
// interface that routes to rank 0 (`master_addr`:`port`), which the other nodes can
// reach too, unlike the host name (Debian maps it to 127.0.1.1). Nullopt when there is
// no route: Gloo's own default then.
std::optional<std::string> address_towards(const std::string& master_addr, int port);

}  // namespace mgpr::runtime
