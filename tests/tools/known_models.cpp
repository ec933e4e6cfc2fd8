#include "tools/known_models.hpp"

#include <stdexcept>
#include <string>

namespace mgpr::test {
namespace {

// Labels every 8-connected component with its largest (row-major index + 1): each
// round a pixel takes the largest label among itself and its 8 neighbours, masked so
// labels never cross the background. A component of diameter D settles in about D
// rounds. float64 keeps the labels exact for any tile a test would use. Dtypes are set
// with .double()/.float()/.long(): in source compiled from C++ there is no Python to
// resolve torch.float64, and the compiler refuses it as "builtin cannot be used as a value".
constexpr const char* kComponents = R"(
def _components(self, x: Tensor) -> Tensor:
    mask = (torch.mean(x, [1], True) > self.threshold).double()
    h = x.size(2)
    w = x.size(3)
    labels = torch.arange(1, h * w + 1, device=x.device).double().reshape([1, 1, h, w]) * mask
    while True:
        grown = torch.max_pool2d(labels, [3, 3], [1, 1], [1, 1]) * mask
        if torch.equal(grown, labels):
            break
        labels = grown
    return labels[:, 0]
)";

// One image's labels [H,W] -> [N,6] rows x1,y1,x2,y2,score,label, in label order.
// torch.unique is Python (torch/functional.py), so its ATen op _unique2 is called.
constexpr const char* kBoxes = R"(
def _boxes(self, labels: Tensor) -> Tensor:
    found = torch._unique2(labels, True, False, True)
    present = found[0] > 0
    values = found[0][present]
    counts = found[2][present]
    n = min(values.size(0), self.max_boxes)
    out = torch.zeros([n, 6], device=labels.device).float()
    for k in range(n):
        component = labels == values[k]
        rows = torch.nonzero(torch.any(component, 1)).flatten()
        columns = torch.nonzero(torch.any(component, 0)).flatten()
        x1 = columns[0]
        y1 = rows[0]
        x2 = columns[-1] + 1
        y2 = rows[-1] + 1
        out[k, 0] = x1
        out[k, 1] = y1
        out[k, 2] = x2
        out[k, 3] = y2
        out[k, 4] = counts[k] / ((x2 - x1) * (y2 - y1))
        out[k, 5] = 1.0
    return out
)";

constexpr const char* kTensorForward = R"(
def forward(self, x: Tensor) -> Tensor:
    labels = self._components(x)
    out = torch.zeros([x.size(0), self.max_boxes, 6], device=x.device).float()
    out[:, :, 4] = -1.0
    for i in range(x.size(0)):
        boxes = self._boxes(labels[i])
        out[i, 0:boxes.size(0)] = boxes
    return out
)";

constexpr const char* kDetections = R"(
def _detections(self, x: Tensor) -> List[Dict[str, Tensor]]:
    labels = self._components(x)
    result: List[Dict[str, Tensor]] = []
    for i in range(x.size(0)):
        boxes = self._boxes(labels[i])
        result.append({"boxes": boxes[:, 0:4].contiguous(), "scores": boxes[:, 4].contiguous(),
                       "labels": boxes[:, 5].long()})
    return result
)";

constexpr const char* kDictsForward = R"(
def forward(self, x: Tensor) -> List[Dict[str, Tensor]]:
    return self._detections(x)
)";

constexpr const char* kTupleForward = R"(
def forward(self, x: Tensor) -> Tuple[Dict[str, Tensor], List[Dict[str, Tensor]]]:
    losses: Dict[str, Tensor] = {}
    return (losses, self._detections(x))
)";

constexpr const char* kSegmenterForward = R"(
def forward(self, x: Tensor) -> Tensor:
    above = torch.mean(x, [1], True) - self.threshold
    below = torch.where(above == 0, torch.ones_like(above), -above)
    return torch.cat([below, above], 1)
)";

// The assert on the product keeps the loop alive through dead-code elimination and
// freezing; (1/256)-filled matrices square to themselves exactly, so it never fires.
// An assert, not `raise Exception(...)`: without Python's resolver the compiler does not
// know the name Exception.
constexpr const char* kSlowForward = R"(
def forward(self, x: Tensor):
    a = torch.full([256, 256], 1.0 / 256, device=x.device).float()
    product = a
    for _ in range(self.rounds):
        product = torch.mm(product, a)
    assert bool(product[0, 0] == 1.0 / 256), "slow: the matrix products went wrong"
    return self.inner.forward(x)
)";

// The size follows the batch, so freezing cannot fold the tensor into a constant, and
// the check reads its last element, so it is neither dead code nor left untouched:
// torch.ones writes every page, which is what a memory cgroup counts.
constexpr const char* kHungryForward = R"(
def forward(self, x: Tensor):
    elements = x.size(0) * self.mib * 262144
    held = torch.ones([elements], device=x.device)
    assert bool(held[elements - 1] == 1.0), "hungry: the memory held went wrong"
    return self.inner.forward(x)
)";

torch::jit::Module scripted(const std::string& name) {
  torch::jit::Module module(name);
  module.register_attribute("training", c10::BoolType::get(), false);
  return module;
}

}  // namespace

torch::jit::Module threshold_detector(double threshold, int max_boxes, DetectorStyle style) {
  if (max_boxes < 1) throw std::invalid_argument("threshold_detector: max_boxes must be at least 1");
  const char* names[] = {"ThresholdDetectorTensor", "ThresholdDetectorDicts", "ThresholdDetectorTuple"};
  auto module = scripted(names[static_cast<int>(style)]);
  module.register_attribute("threshold", c10::FloatType::get(), threshold);
  module.register_attribute("max_boxes", c10::IntType::get(), static_cast<std::int64_t>(max_boxes));
  std::string source = std::string(kComponents) + kBoxes;
  switch (style) {
    case DetectorStyle::kTensor:
      source += kTensorForward;
      break;
    case DetectorStyle::kDicts:
      source += std::string(kDetections) + kDictsForward;
      break;
    case DetectorStyle::kTupleLossesDicts:
      source += std::string(kDetections) + kTupleForward;
      break;
  }
  module.define(source);
  return module;
}

torch::jit::Module fixed_boxes_detector() {
  auto module = scripted("FixedBoxesDetector");
  // A larger object and one the tile's right edge (x=1024) cuts, IoU 0.26.
  module.define(R"(
def forward(self, x: Tensor) -> Tensor:
    boxes = torch.tensor([[500.0, 100.0, 1000.0, 400.0, 0.9, 1.0],
                          [800.0, 150.0, 1024.0, 350.0, 0.8, 1.0]], device=x.device)
    return boxes.unsqueeze(0).repeat(x.size(0), 1, 1)
)");
  return module;
}

torch::jit::Module grid_boxes_detector(int grid) {
  if (grid < 1) throw std::invalid_argument("grid_boxes_detector: grid must be at least 1");
  auto module = scripted("GridBoxesDetector");
  module.register_attribute("grid", c10::IntType::get(), static_cast<std::int64_t>(grid));
  module.define(R"(
def forward(self, x: Tensor) -> Tensor:
    cell_h = float(x.size(2)) / self.grid
    cell_w = float(x.size(3)) / self.grid
    cell = torch.arange(self.grid * self.grid, device=x.device)
    row = torch.div(cell, self.grid, rounding_mode='floor').float()
    column = torch.remainder(cell, self.grid).float()
    x1 = column * cell_w + 1.0
    y1 = row * cell_h + 1.0
    boxes = torch.stack([x1, y1, x1 + cell_w - 2.0, y1 + cell_h - 2.0,
                         torch.full_like(x1, 0.9), torch.ones_like(x1)], 1)
    return boxes.unsqueeze(0).repeat(x.size(0), 1, 1)
)");
  return module;
}

torch::jit::Module tile_mean_classifier() {
  auto module = scripted("TileMean");
  module.define(R"(
def forward(self, x: Tensor) -> Tensor:
    m = torch.mean(x, [1, 2, 3])
    return torch.stack([m, -m], 1)
)");
  return module;
}

torch::jit::Module last_band_classifier(double threshold, int input_size) {
  auto module = scripted("LastBandClassifier");
  module.register_attribute("threshold", c10::FloatType::get(), threshold);
  module.register_attribute("input_size", c10::IntType::get(), static_cast<std::int64_t>(input_size));
  module.define(R"(
def forward(self, x: Tensor) -> Tensor:
    if self.input_size > 0:
        assert x.size(2) == self.input_size and x.size(3) == self.input_size, "crops of another size than trained"
    above = (torch.mean(x[:, -1], [1, 2]) - self.threshold) * 1000.0
    return torch.stack([-above, above], 1)
)");
  return module;
}

torch::jit::Module threshold_segmenter(double threshold) {
  auto module = scripted("ThresholdSegmenter");
  module.register_attribute("threshold", c10::FloatType::get(), threshold);
  module.define(kSegmenterForward);
  return module;
}

torch::jit::Module slow(const torch::jit::Module& inner, int matmul_rounds) {
  if (matmul_rounds < 0) throw std::invalid_argument("slow: matmul_rounds must not be negative");
  auto module = scripted("SlowWrapper");
  module.register_module("inner", inner);
  module.register_attribute("rounds", c10::IntType::get(), static_cast<std::int64_t>(matmul_rounds));
  module.define(kSlowForward);
  return module;
}

torch::jit::Module hungry(const torch::jit::Module& inner, int mib_per_tile) {
  if (mib_per_tile < 1) throw std::invalid_argument("hungry: mib_per_tile must be at least 1");
  auto module = scripted("HungryWrapper");
  module.register_module("inner", inner);
  module.register_attribute("mib", c10::IntType::get(), static_cast<std::int64_t>(mib_per_tile));
  module.define(kHungryForward);
  return module;
}

}  // namespace mgpr::test
