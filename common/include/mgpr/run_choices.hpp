#pragma once
// The run's choices that take one of a few named values (task=, sharding=, accelerator=,
// precision=, jit_executor=). The configuration keeps the names users type; the run plan turns them
// into these enums once, so no stage compares strings. The name lists here are also the
// values the configuration accepts (one list each).
#include <array>
#include <string_view>

namespace mgpr {

enum class Task { kClassify, kDetect, kSegment };
enum class Sharding { kDynamic, kStatic };
enum class OnRankLoss { kFail, kContinue };
enum class Accelerator { kAuto, kGpu, kCpu };
// kAuto only as asked for: the run plan resolves it to one of the others per device.
enum class Precision { kAuto, kFp32, kFp16, kBf16 };
// jit_executor=: the TorchScript executor that runs the model. kSimple: the graph
// optimiser off (no profiling runs, no fusers); kProfiling: LibTorch's default, profiling
// each new input shape and fusing with its TensorExpr fuser; kProfilingNoFuser: that
// executor with the TensorExpr fuser off. kAuto only as asked for: the execution policy
// resolves it per device.
enum class JitExecutor { kAuto, kSimple, kProfiling, kProfilingNoFuser };
// outputs=: result files per raster, one set for the run, or by the raster count.
enum class OutputLayout { kAuto, kPerRaster, kRun };
// output_format=: the format of the vector results (docs/outputs.md).
enum class OutputFormat { kGeoPackage, kFlatGeobuf, kGeoJson, kShapefile, kCsv, kGeoParquet };
// outputs=auto writes per-raster files up to this many rasters, the run's above.
inline constexpr int kPerRasterOutputsUpTo = 8;

// In the enums' order, so an enum's value indexes its name.
inline constexpr std::array<std::string_view, 3> kTaskNames{"classify", "detect", "segment"};
inline constexpr std::array<std::string_view, 2> kShardingNames{"dynamic", "static"};
inline constexpr std::array<std::string_view, 2> kOnRankLossNames{"fail", "continue"};
inline constexpr std::array<std::string_view, 3> kAcceleratorNames{"auto", "gpu", "cpu"};
inline constexpr std::array<std::string_view, 4> kPrecisionNames{"auto", "fp32", "fp16", "bf16"};
inline constexpr std::array<std::string_view, 4> kJitExecutorNames{"auto", "simple", "profiling", "profiling_no_fuser"};
inline constexpr std::array<std::string_view, 3> kOutputLayoutNames{"auto", "per_raster", "run"};
// The formats' file extensions, without the dot.
inline constexpr std::array<std::string_view, 6> kOutputFormatNames{"gpkg", "fgb", "geojson", "shp", "csv", "parquet"};
// resampling=: GDAL's resampling methods on read; auto picks average when a raster is
// coarsened to the model's gsd and bilinear when it is refined.
inline constexpr std::array<std::string_view, 8> kResamplingNames{"auto",        "nearest", "bilinear", "cubic",
                                                                  "cubicspline", "lanczos", "average",  "mode"};
// segment_resolution=: the class raster of a resampled raster at the model's gsd, or
// resampled back (nearest) to the raster's own grid.
inline constexpr std::array<std::string_view, 2> kSegmentResolutionNames{"model", "raster"};
// dummy_dataset_type=: the sample type fake tiles travel as; uint8 and uint16 travel raw,
// as a Byte or UInt16 raster's do, and are scaled where the model runs.
inline constexpr std::array<std::string_view, 3> kFakeDataTypeNames{"float32", "uint8", "uint16"};

std::string_view name_of(Task task);
std::string_view name_of(Sharding sharding);
std::string_view name_of(Accelerator accelerator);
std::string_view name_of(Precision precision);
std::string_view name_of(JitExecutor executor);
std::string_view name_of(OutputLayout layout);
std::string_view name_of(OutputFormat format);

// Each throws UsageError naming the key, the value and the values allowed.
Task parse_task(std::string_view name);
Sharding parse_sharding(std::string_view name);
OnRankLoss parse_on_rank_loss(std::string_view name);
Accelerator parse_accelerator(std::string_view name);
Precision parse_precision(std::string_view name);
JitExecutor parse_jit_executor(std::string_view name);
OutputLayout parse_output_layout(std::string_view name);
OutputFormat parse_output_format(std::string_view name);

// nodata=: which pixels are missing. kRaster: the raster's own rule (its nodata values,
// when every selected band holds its value; its mask or alpha band); kNone: none are;
// kValue: pixels whose every selected band equals `value`.
struct NodataRule {
  enum class Kind { kRaster, kNone, kValue };
  Kind kind = Kind::kRaster;
  double value = 0.0;
  bool operator==(const NodataRule&) const = default;
};
// "" (the raster's own), "none", or a number (also "nan"). Throws UsageError otherwise.
NodataRule parse_nodata(std::string_view text);

}  // namespace mgpr
