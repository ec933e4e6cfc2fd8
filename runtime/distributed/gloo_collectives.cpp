#include "distributed/gloo_collectives.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "distributed/gloo_address.hpp"
#include "mgpr/store_keys.hpp"

namespace mgpr::runtime {
namespace {

using std::chrono::milliseconds;

std::shared_ptr<::gloo::transport::Device> gloo_device(const RankEnvironment& ranks) {
  using Gloo = ::c10d::ProcessGroupGloo;
  // The variable torch.distributed honours, for nodes with several networks.
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface != nullptr && *interface != '\0') {
    std::string first(interface);
    first = first.substr(0, first.find(','));
    return Gloo::createDeviceForInterface(first);
  }
  if (const auto address = address_towards(ranks.master_addr, ranks.master_port)) {
    return Gloo::createDeviceForHostname(*address);
  }
  return Gloo::createDefaultDevice();
}

class GlooCollectives final : public Collectives {
 public:
  GlooCollectives(const c10::intrusive_ptr<c10d::Store>& store, const RankEnvironment& ranks, milliseconds timeout) {
    auto options = ::c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(gloo_device(ranks));
    // Gloo's keys under a prefix of their own, apart from the rendezvous and the counters.
    auto prefixed =
        c10::make_intrusive<c10d::PrefixStore>(std::string(store_key_row(StoreKey::kGlooPrefix).name), store);
    group_ = c10::make_intrusive<::c10d::ProcessGroupGloo>(prefixed, ranks.rank, ranks.world_size, options);
    world_size_ = ranks.world_size;
  }

  void barrier() override { group_->barrier()->wait(); }

  // Gloo's allgather wants equal sizes: gather the lengths, then bytes padded to the
  // longest (at least one byte: Gloo refuses empty buffers).
  std::vector<std::string> all_gather(const std::string& bytes) override {
    std::vector<at::Tensor> length_in{at::full({1}, static_cast<std::int64_t>(bytes.size()), at::kLong)};
    std::vector<std::vector<at::Tensor>> length_out(1);
    for (int r = 0; r < world_size_; ++r) length_out[0].push_back(at::empty({1}, at::kLong));
    group_->allgather(length_out, length_in)->wait();

    std::vector<std::int64_t> lengths;
    for (const auto& t : length_out[0]) lengths.push_back(t.item<std::int64_t>());
    const std::int64_t padded = std::max<std::int64_t>(1, *std::max_element(lengths.begin(), lengths.end()));

    std::vector<at::Tensor> data_in{at::zeros({padded}, at::kByte)};
    std::memcpy(data_in[0].data_ptr<std::uint8_t>(), bytes.data(), bytes.size());
    std::vector<std::vector<at::Tensor>> data_out(1);
    for (int r = 0; r < world_size_; ++r) data_out[0].push_back(at::empty({padded}, at::kByte));
    group_->allgather(data_out, data_in)->wait();

    std::vector<std::string> out;
    for (int r = 0; r < world_size_; ++r) {
      const auto* begin =
          reinterpret_cast<const char*>(data_out[0][static_cast<std::size_t>(r)].data_ptr<std::uint8_t>());
      out.emplace_back(begin, static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]));
    }
    return out;
  }

 private:
  c10::intrusive_ptr<::c10d::ProcessGroupGloo> group_;
  int world_size_ = 0;
};

}  // namespace

std::unique_ptr<Collectives> make_gloo_collectives(const c10::intrusive_ptr<c10d::Store>& store,
                                                   const RankEnvironment& ranks, milliseconds timeout) {
  return std::make_unique<GlooCollectives>(store, ranks, timeout);
}

}  // namespace mgpr::runtime
