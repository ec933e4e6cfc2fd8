#pragma once
// TorchScript models whose outputs are known exactly for any input, built in C++ (no
// Python, nothing downloaded), so detect and segment runs can be checked against the
// squares mgpr-test-image paints. All take x [B,C,H,W] float and look only at the mean
// over bands: mean > threshold (strict) is "object".
#include <torch/script.h>

namespace mgpr::test {

// The output conventions detection models come in.
enum class DetectorStyle {
  kTensor,            // [B, max_boxes, 6]: x1,y1,x2,y2,score,label; padding rows are 0 with score -1
  kDicts,             // List[Dict[str,Tensor]]: boxes [N,4] float, scores [N] float, labels [N] int64 (torchvision)
  kTupleLossesDicts,  // Tuple[Dict[str,Tensor], List[Dict[str,Tensor]]]: an empty losses dict first, as
                      // torchvision's scripted detectors return
};

// One box per 8-connected component of the mask: x1,y1 the least column and row, x2,y2
// one past the greatest (pixel-corner, exclusive), score = pixels / box area (1 for a
// clean square), label 1. Two squares touching only at a corner are one component.
// Components come in order of their last pixel in row-major order (the label the
// max-pooling leaves on them), at most max_boxes of them per image; the rest are dropped.
torch::jit::Module threshold_detector(double threshold, int max_boxes, DetectorStyle style);

// [B,2,H,W] logits: channel 1 = mean - threshold, channel 0 = threshold - mean, except 1
// where mean == threshold, so argmax is class 1 exactly where mean > threshold and needs
// no tie-break rule.
torch::jit::Module threshold_segmenter(double threshold);

// Whatever the tile, two boxes of label 1 in tile pixels: (500,100)-(1000,400) score 0.9
// and (800,150)-(1024,350) score 0.8, which a 1024 tile's right edge cuts.
torch::jit::Module fixed_boxes_detector();

// Whatever the tile, grid x grid boxes of label 1 and score 0.9, one inside each cell of
// the tile cut in grid x grid (a pixel short of the cell's sides, so neighbours never
// overlap): a detector as cheap as a model can be, for measuring what happens to boxes.
torch::jit::Module grid_boxes_detector(int grid);

// A classifier whose two logits per tile are the mean of every pixel of the tile and its
// negation (tests/support/tile_mean_model.hpp's model): any changed pixel changes them.
torch::jit::Module tile_mean_classifier();
// A crop classifier by colour: class 1 where the mean of the input's last band is above
// `threshold`, else class 0, with logits a thousand times that difference (a confident
// softmax). With `input_size` > 0 it refuses inputs of another side, as a model trained
// at one size does.
torch::jit::Module last_band_classifier(double threshold, int input_size);

// Returns inner's output unchanged after `matmul_rounds` products of 256x256 matrices
// (34 MFLOP each, about 1 ms on one desktop core), so a run lasts long enough to be
// interrupted. The products feed
// a check that never fails, so no optimisation pass can drop them as dead code.
torch::jit::Module slow(const torch::jit::Module& inner, int matmul_rounds);

// Returns inner's output unchanged after filling `mib_per_tile` MiB per tile of the batch
// (float32 ones, every page written), as a model whose activations outgrow the memory a
// job asked for: the kernel or the job's memory cgroup kills the rank, not mgpr's check
// of the tiles in flight, which cannot know a model's own needs.
torch::jit::Module hungry(const torch::jit::Module& inner, int mib_per_tile);

}  // namespace mgpr::test
