#pragma once
// The model on the rank's device, as the pipeline drives it (pipeline/batch_device.hpp).
// On a CPU the forward pass runs inside submit() and the host is the device. On a GPU
// submit() only queues work: each slot copies its page-locked input on a copy stream of
// its own, the compute stream waits for that copy, runs the model, and copies the output
// back into page-locked memory; an event after the copy back tells collect() the output
// is on the host. So two batches are queued on the GPU while the host fills the third,
// and the next forward pass is queued before the previous output is read. A detector's
// forward pass holds the host until its boxes are filtered: its passes run on threads of
// their own, each slot's on a compute stream of its own, two at once.
#include <memory>
#include <optional>

#include "model/model.hpp"
#include "pipeline/batch_device.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// The pipeline's batch slots on `device` (BatchDevice::slots()): 3 on a GPU, 2 on a CPU.
int pipeline_slots(const DeviceChoice& device);

// Whether a model whose output is like `output` (its output for the one-tile check)
// holds the host during its forward pass on a GPU: a list of per-tile dicts (a
// torchvision detector's, alone or in its scripted (losses, detections) tuple), since
// such a pass filters each tile's boxes by score and so waits for the scores. Its passes
// then run on threads of their own (BatchDevice::forward_blocks).
bool forward_blocks_host(const torch::IValue& output);

// `model` must outlive the device returned. `raw`: set when tiles come raw
// (TileSource::raw_scaling): they are scaled on the device before the model.
std::unique_ptr<BatchDevice> make_model_device(TileModel& model, const DeviceChoice& device,
                                               const std::optional<RawScaling>& raw = std::nullopt);

}  // namespace mgpr::runtime
