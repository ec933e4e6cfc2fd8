// GDAL's writer of records: every format whose row (vector_formats.cpp) names
// VectorWriterKind::kGdal goes through here, its differences read from its row, never
// from which format it is.
#include <cpl_conv.h>
#include <fmt/format.h>
#include <ogr_feature.h>
#include <ogr_geometry.h>
#include <ogr_spatialref.h>
#include <ogrsf_frmts.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "writers/gdal_write.hpp"
#include "writers/geoparquet_writer.hpp"
#include "writers/gpkg_rtree.hpp"
#include "writers/vector_output.hpp"

namespace mgpr::runtime {
namespace {

// UndefinedCrs::kUndefinedCartesian as GDAL takes it: for this name its GeoPackage
// driver writes the "undefined Cartesian" CRS (srs_id -1).
constexpr const char* kUndefinedCartesian =
    R"(LOCAL_CS["Undefined Cartesian SRS",UNIT["Meter",1],AXIS["Easting",EAST],AXIS["Northing",NORTH]])";

OGRFieldType ogr_type(VectorField::Type type) {
  switch (type) {
    case VectorField::Type::kInteger:
      return OFTInteger64;
    case VectorField::Type::kReal:
      return OFTReal;
    case VectorField::Type::kString:
      return OFTString;
  }
  return OFTString;
}

// A row's creation options as GDAL takes them (none: a null list, GDAL's defaults).
CPLStringList gdal_options(std::span<const CreationOption> options) {
  CPLStringList list;
  for (const auto& option : options) {
    list.SetNameValue(std::string(option.name).c_str(), std::string(option.value).c_str());
  }
  return list;
}

// The variant's alternatives are in the same order as VectorField::Type's values.
void check_values(const std::filesystem::path& file, std::span<const VectorField> fields,
                  std::span<const Record> records) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& values = records[i].values;
    if (values.size() != fields.size()) {
      throw std::invalid_argument(
          fmt::format("'{}': feature {} has {} values for {} fields", file.string(), i, values.size(), fields.size()));
    }
    for (std::size_t f = 0; f < fields.size(); ++f) {
      if (values[f].index() != static_cast<std::size_t>(fields[f].type)) {
        throw std::invalid_argument(fmt::format("'{}': feature {} has a value of the wrong type for field '{}'",
                                                file.string(), i, fields[f].name));
      }
    }
  }
}

const VectorFormat& format_of(const std::filesystem::path& file, std::span<const RecordLayer> layers) {
  const auto format = vector_format_of(file);
  if (!format) throw std::invalid_argument(fmt::format("'{}': no vector format has this extension", file.string()));
  const auto& row = vector_format(*format);
  if (!row.many_layers && layers.size() != 1) {
    throw std::invalid_argument(
        fmt::format("'{}': {} holds one layer per file, not {}", file.string(), row.driver, layers.size()));
  }
  for (const auto& layer : layers) check_values(file, layer.fields, layer.records);
  return row;
}

void set_values(OGRFeature& feature, const std::vector<FieldValue>& values) {
  for (std::size_t f = 0; f < values.size(); ++f) {
    const int index = static_cast<int>(f);
    if (const auto* integer = std::get_if<std::int64_t>(&values[f])) {
      feature.SetField(index, static_cast<GIntBig>(*integer));
    } else if (const auto* real = std::get_if<double>(&values[f])) {
      feature.SetField(index, *real);
    } else {
      feature.SetField(index, std::get<std::string>(values[f]).c_str());
    }
  }
}

// The layers' CRSs; for a layer without one, what its format writes then (its row's
// undefined_crs): none, or the undefined Cartesian CRS.
std::vector<std::unique_ptr<OGRSpatialReference>> layer_crs(const std::filesystem::path& file,
                                                            const VectorFormat& format,
                                                            std::span<const RecordLayer> layers) {
  std::vector<std::unique_ptr<OGRSpatialReference>> crs;
  for (const auto& layer : layers) {
    const bool undefined = layer.crs_wkt.empty();
    if (undefined && format.undefined_crs == UndefinedCrs::kNone) {
      crs.emplace_back();
      continue;
    }
    auto& one = crs.emplace_back(std::make_unique<OGRSpatialReference>());
    if (one->importFromWkt(undefined ? kUndefinedCartesian : layer.crs_wkt.c_str()) != OGRERR_NONE) {
      output::fail(file, "its CRS is not valid WKT");
    }
    // Coordinates come from the geotransform, which is always x = easting/longitude.
    one->SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
  }
  return crs;
}

OGRLayer& create_layer(GDALDataset& dataset, const std::filesystem::path& file, const VectorFormat& format,
                       const RecordLayer& layer, OGRSpatialReference* crs) {
  auto* out = dataset.CreateLayer(layer.name.c_str(), crs, wkbPolygon, gdal_options(format.layer_options).List());
  if (out == nullptr) output::fail(file, fmt::format("creating layer '{}' failed", layer.name));
  for (const auto& field : layer.fields) {
    OGRFieldDefn definition(field_name_in(format, field.name).c_str(), ogr_type(field.type));
    if (format.text_width > 0 && field.type == VectorField::Type::kString) definition.SetWidth(format.text_width);
    if (out->CreateField(&definition) != OGRERR_NONE) {
      output::fail(file, fmt::format("creating field '{}' failed", field.name));
    }
  }
  return *out;
}

// A GeoPackage's spatial index is updated by SQLite as each feature comes (its pages
// cached within SQLite's bounds), unless the user chose otherwise. GDAL's default (3.6
// on) builds the index of a new layer in memory on a thread of its own and writes it at
// close: that memory grows with the run's features (measured: rank 0's resident set grew
// by about 1 MiB/s, 20 bytes a box, for the whole of a 4.5-million-box run, where with
// this setting it levels off), which the NEON-sized run (100 million boxes) cannot hold.
void index_features_as_they_come() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (CPLGetConfigOption("OGR_GPKG_ALLOW_THREADED_RTREE", nullptr) == nullptr) {
      CPLSetConfigOption("OGR_GPKG_ALLOW_THREADED_RTREE", "NO");
    }
  });
}

}  // namespace

// A commit every so many features: SQLite keeps an open transaction's pages in its cache
// and its journal, so one transaction over a whole run would grow both with the run,
// while a commit per raster would sync the file thousands of times.
constexpr std::int64_t kFeaturesPerCommit = 65536;

struct VectorFileWriter::Open {
  Open(const std::filesystem::path& target, const VectorFormat& row)
      : file(target), format(row), partial(target, row.sidecars) {}
  std::filesystem::path file;
  const VectorFormat& format;
  output::PartialFile partial;  // before the dataset: closed first
  GDALDatasetUniquePtr dataset;
  std::vector<OGRLayer*> layers;
  std::vector<std::vector<VectorField>> fields;
  // A GeoPackage layer's spatial index, written as features come (gpkg_rtree.hpp); null
  // where the row's index is another, or where GDAL's triggers keep it.
  std::vector<std::unique_ptr<output::GpkgRtree>> indexes;
  bool transactions = false;
  bool in_transaction = false;
  std::int64_t uncommitted = 0;
  // A format of the project's own writer: GDAL's members above stay unused.
  std::unique_ptr<output::GeoParquetDataset> geoparquet;
};

VectorFileWriter::VectorFileWriter(const std::filesystem::path& file, std::span<const RecordLayer> layers,
                                   std::span<const std::pair<std::string, std::string>> run_settings) {
  const auto& format = format_of(file, layers);
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  if (format.writer == VectorWriterKind::kGeoParquet) {
    open_ = std::make_unique<Open>(file, format);
    open_->geoparquet = std::make_unique<output::GeoParquetDataset>(file, layers, run_settings);
    for (const auto& layer : layers) open_->fields.emplace_back(layer.fields.begin(), layer.fields.end());
    return;
  }
  if (format.geometry_index == GeometryIndex::kGpkgRtree) index_features_as_they_come();
  open_ = std::make_unique<Open>(file, format);
  auto& driver = output::driver(std::string(format.driver).c_str(), file);
  const auto crs = layer_crs(file, format, layers);
  open_->dataset.reset(
      driver.Create(open_->partial.path().c_str(), 0, 0, 0, GDT_Unknown, gdal_options(format.dataset_options).List()));
  if (!open_->dataset) output::fail(file, fmt::format("creating the {} file failed", format.driver));
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto& layer = create_layer(*open_->dataset, file, format, layers[i], crs[i].get());
    // A GeoPackage defers a layer's table to its first feature and lists its layers in
    // the order their tables came: made now, a file's layers stay in the order given,
    // however their features arrive. Its spatial index is made now too, so that it can be
    // written as features come (gpkg_rtree.hpp), while tiles still run: built at the end
    // instead, from all features at once, it was most of the time after the last tile
    // (GDAL 3.6).
    const bool made_now = format.many_layers || format.geometry_index == GeometryIndex::kGpkgRtree;
    if (made_now && layer.SyncToDisk() != OGRERR_NONE) {
      output::fail(file, fmt::format("creating layer '{}' failed", layers[i].name));
    }
    open_->layers.push_back(&layer);
    open_->fields.emplace_back(layers[i].fields.begin(), layers[i].fields.end());
    open_->indexes.push_back(
        format.geometry_index == GeometryIndex::kGpkgRtree
            ? output::GpkgRtree::take_over(*open_->dataset, file, layer.GetName(), layer.GetGeometryColumn())
            : nullptr);
  }
  // Transactions where the format has them: SQLite otherwise commits (and syncs) after
  // every feature.
  open_->transactions = open_->dataset->TestCapability(ODsCTransactions) != 0;
}

VectorFileWriter::~VectorFileWriter() = default;
VectorFileWriter::VectorFileWriter(VectorFileWriter&&) noexcept = default;
VectorFileWriter& VectorFileWriter::operator=(VectorFileWriter&&) noexcept = default;

void VectorFileWriter::append(std::size_t layer, std::span<const Record> records) {
  if (!open_) throw std::logic_error("records appended to a vector file already committed");
  auto& state = *open_;
  check_values(state.file, state.fields.at(layer), records);
  if (state.geoparquet) {
    state.geoparquet->append(layer, records);
    return;
  }
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  for (const auto& record : records) {
    if (state.transactions && !state.in_transaction) {
      if (state.dataset->StartTransaction() != OGRERR_NONE) output::fail(state.file, "starting a transaction failed");
      state.in_transaction = true;
    }
    OGRFeature row(state.layers[layer]->GetLayerDefn());
    set_values(row, record.values);
    const OGRPolygon shape = output::ogr_polygon(record.geometry);
    row.SetGeometry(&shape);
    if (state.layers[layer]->CreateFeature(&row) != OGRERR_NONE) output::fail(state.file, "writing a feature failed");
    if (auto* index = state.indexes[layer].get(); index != nullptr && !shape.IsEmpty()) {
      OGREnvelope bounds;
      shape.getEnvelope(&bounds);
      index->add(row.GetFID(), {bounds.MinX, bounds.MaxX, bounds.MinY, bounds.MaxY});
    }
    if (++state.uncommitted >= kFeaturesPerCommit) commit_features();
  }
}

void VectorFileWriter::commit_features() {
  auto& state = *open_;
  if (state.in_transaction && state.dataset->CommitTransaction() != OGRERR_NONE) {
    output::fail(state.file, "committing the features failed");
  }
  state.in_transaction = false;
  state.uncommitted = 0;
}

void VectorFileWriter::commit() {
  if (!open_) throw std::logic_error("a vector file committed twice");
  const GdalErrorScope errors(GdalErrorScope::Warnings::kShown);
  auto& state = *open_;
  if (state.geoparquet) {
    state.geoparquet->commit();
    open_.reset();
    return;
  }
  // The spatial indexes' last nodes and triggers, in the last transaction.
  for (auto& index : state.indexes) {
    if (!index) continue;
    if (state.transactions && !state.in_transaction) {
      if (state.dataset->StartTransaction() != OGRERR_NONE) output::fail(state.file, "starting a transaction failed");
      state.in_transaction = true;
    }
    index->finish();
  }
  state.indexes.clear();  // their statements finalized before GDAL closes the connection
  commit_features();
  output::close(open_->dataset, open_->file);
  open_->partial.commit();
  open_.reset();
}

void write_vector_layers(const std::filesystem::path& file, std::span<const RecordLayer> layers) {
  VectorFileWriter writer(file, layers);
  for (std::size_t i = 0; i < layers.size(); ++i) writer.append(i, layers[i].records);
  writer.commit();
}

std::optional<int> epsg_code(const std::string& crs_wkt) {
  if (crs_wkt.empty()) return std::nullopt;
  const GdalErrorScope errors(GdalErrorScope::Warnings::kQuiet);
  OGRSpatialReference crs;
  if (crs.importFromWkt(crs_wkt.c_str()) != OGRERR_NONE) return std::nullopt;
  const auto code_of = [&]() -> std::optional<int> {
    const char* authority = crs.GetAuthorityName(nullptr);
    const char* code = crs.GetAuthorityCode(nullptr);
    if (authority == nullptr || code == nullptr || std::string_view(authority) != "EPSG") return std::nullopt;
    try {
      return std::stoi(code);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  };
  if (const auto code = code_of()) return code;
  if (crs.AutoIdentifyEPSG() != OGRERR_NONE) return std::nullopt;
  return code_of();
}

namespace output {

OGRPolygon ogr_polygon(const Geometry& geometry) {
  OGRPolygon result;
  for (const auto& points : geometry.rings) {
    OGRLinearRing ring;
    for (const auto& point : points) ring.addPoint(point.x, point.y);
    ring.closeRings();
    result.addRing(&ring);
  }
  return result;
}

}  // namespace output

}  // namespace mgpr::runtime
