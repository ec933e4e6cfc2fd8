#pragma once
// The model on the rank's device, as the pipeline drives it (pipeline/batch_device.hpp).
// On a CPU the forward pass runs inside submit() and the host is the device. On a GPU
// submit() only queues work: each slot copies its page-locked input on a copy stream of
// its own, the compute stream waits for that copy, runs the model, and copies the output
// back into page-locked memory; an event after the copy back tells collect() the output
// is on the host. So two batches are queued on the GPU while the host fills the third,
// and the next forward pass is queued before the previous output is read.
#include <memory>
#include <optional>

#include "model/model.hpp"
#include "pipeline/batch_device.hpp"
#include "source/tile_source.hpp"

namespace mgpr::runtime {

// The pipeline's batch slots on `device` (BatchDevice::slots()): 3 on a GPU, 2 on a CPU.
int pipeline_slots(const DeviceChoice& device);

// `model` must outlive the device returned. `raw`: set when tiles come raw
// (TileSource::raw_scaling): they are scaled on the device before the model.
std::unique_ptr<BatchDevice> make_model_device(TileModel& model, const DeviceChoice& device,
                                               const std::optional<RawScaling>& raw = std::nullopt);

}  // namespace mgpr::runtime
