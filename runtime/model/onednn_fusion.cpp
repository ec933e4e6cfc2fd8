#include "model/onednn_fusion.hpp"

#include <ATen/Config.h>
#include <torch/csrc/jit/passes/pass_manager.h>
#include <torch/version.h>

#include <memory>

#if TORCH_VERSION_MAJOR >= 2 && AT_MKLDNN_ENABLED()
#define MGPR_HAVE_ONEDNN_FUSION 1
namespace torch::jit::fuser::onednn {
// Exported by libtorch_cpu; the PyTorch wheel ships no header for it
// (torch/csrc/jit/codegen/onednn/interface.h, whose RegisterLlgaFuseGraph does what
// enable_onednn_fusion does, as torch.jit.enable_onednn_fusion(True) does in Python).
TORCH_API void fuseGraph(std::shared_ptr<Graph>& graph);
}  // namespace torch::jit::fuser::onednn
#endif

namespace mgpr::runtime {

bool enable_onednn_fusion() {
#ifdef MGPR_HAVE_ONEDNN_FUSION
  static const bool registered = [] {
    torch::jit::registerPrePass(torch::jit::fuser::onednn::fuseGraph);
    return true;
  }();
  return registered;
#else
  return false;
#endif
}

}  // namespace mgpr::runtime
