#include "writers/geoparquet_writer.hpp"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <fmt/format.h>
#include <ogr_spatialref.h>
#include <openssl/evp.h>
#include <parquet/arrow/writer.h>

#include <fstream>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "mgpr/version.hpp"
#include "writers/geoparquet_layout.hpp"
#include "writers/partial_names.hpp"

namespace mgpr::runtime::output {
namespace {

[[noreturn]] void dataset_failure(const std::filesystem::path& folder, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", folder.string(), what));
}

void check(const arrow::Status& status, const std::filesystem::path& folder, std::string_view doing) {
  if (!status.ok()) dataset_failure(folder, fmt::format("{} failed: {}", doing, status.ToString()));
}

std::string projjson_of(const std::string& crs_wkt, const std::filesystem::path& folder) {
  if (crs_wkt.empty()) return {};
  OGRSpatialReference crs;
  char* text = nullptr;
  if (crs.importFromWkt(crs_wkt.c_str()) != OGRERR_NONE || crs.exportToPROJJSON(&text, nullptr) != OGRERR_NONE) {
    CPLFree(text);
    dataset_failure(folder, "its CRS could not be written as PROJJSON");
  }
  std::string json(text);
  CPLFree(text);
  return json;
}

std::string sha256_of(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  std::vector<char> buffer(1 << 20);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    EVP_DigestUpdate(context.get(), buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::shared_ptr<arrow::DataType> arrow_type(VectorField::Type type) {
  switch (type) {
    case VectorField::Type::kInteger:
      return arrow::int64();
    case VectorField::Type::kReal:
      return arrow::float64();
    case VectorField::Type::kString:
      break;
  }
  return arrow::utf8();
}

std::shared_ptr<arrow::DataType> bbox_type() {
  return arrow::struct_({arrow::field("xmin", arrow::float64(), false), arrow::field("ymin", arrow::float64(), false),
                         arrow::field("xmax", arrow::float64(), false), arrow::field("ymax", arrow::float64(), false)});
}

}  // namespace

bool geoparquet_available() { return true; }

struct GeoParquetLayer {
  std::string name;
  std::string projjson;
  std::vector<VectorField> fields;
  std::shared_ptr<arrow::Schema> schema;
  std::vector<Record> pending;  // the next row group's rows
  // The part being written.
  std::shared_ptr<arrow::io::FileOutputStream> stream;
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  PartRecord part;
  int parts_made = 0;
};

struct GeoParquetDataset::Parts {
  std::filesystem::path folder;
  std::filesystem::path partial;
  std::vector<GeoParquetLayer> layers;
  std::vector<PartRecord> written;
  std::vector<std::pair<std::string, std::string>> run_settings;
  bool committed = false;

  void open_part(GeoParquetLayer& layer) {
    layer.part = {fmt::format("{}-{:04}.parquet", layer.name, layer.parts_made++), layer.name, 0, {}, {}};
    auto stream = arrow::io::FileOutputStream::Open((partial / layer.part.file).string());
    check(stream.status(), folder, "creating " + layer.part.file);
    layer.stream = *stream;
    const auto properties = parquet::WriterProperties::Builder()
                                .compression(parquet::Compression::ZSTD)
                                ->max_row_group_length(kRowsPerGroup)
                                ->build();
    auto writer = parquet::arrow::FileWriter::Open(*layer.schema, arrow::default_memory_pool(), layer.stream,
                                                   properties, parquet::default_arrow_writer_properties());
    check(writer.status(), folder, "starting " + layer.part.file);
    layer.writer = std::move(*writer);
  }

  void close_part(GeoParquetLayer& layer) {
    const auto metadata = arrow::key_value_metadata({"geo"}, {geo_metadata(layer.projjson, layer.part.bbox)});
    check(layer.writer->AddKeyValueMetadata(metadata), folder, "the geo metadata of " + layer.part.file);
    check(layer.writer->Close(), folder, "closing " + layer.part.file);
    check(layer.stream->Close(), folder, "closing " + layer.part.file);
    layer.writer.reset();
    layer.stream.reset();
    layer.part.sha256 = sha256_of(partial / layer.part.file);
    written.push_back(layer.part);
  }

  // The pending rows as a row group, in Hilbert order.
  void write_pending(GeoParquetLayer& layer) {
    if (!layer.writer) open_part(layer);
    std::vector<Bounds> boxes;
    boxes.reserve(layer.pending.size());
    for (const auto& record : layer.pending) boxes.push_back(bounds_of(record.geometry));
    std::vector<std::unique_ptr<arrow::ArrayBuilder>> columns;
    for (const auto& field : layer.fields) {
      std::unique_ptr<arrow::ArrayBuilder> builder;
      check(arrow::MakeBuilder(arrow::default_memory_pool(), arrow_type(field.type), &builder), folder, "a column");
      columns.push_back(std::move(builder));
    }
    arrow::BinaryBuilder geometry;
    std::unique_ptr<arrow::ArrayBuilder> bbox_builder;
    check(arrow::MakeBuilder(arrow::default_memory_pool(), bbox_type(), &bbox_builder), folder, "the bbox column");
    auto& bbox = static_cast<arrow::StructBuilder&>(*bbox_builder);
    for (const auto row : hilbert_order(boxes)) {
      const auto& record = layer.pending[row];
      for (std::size_t f = 0; f < columns.size(); ++f) {
        const auto& value = record.values.at(f);
        arrow::Status status;
        if (const auto* integer = std::get_if<std::int64_t>(&value)) {
          status = static_cast<arrow::Int64Builder&>(*columns[f]).Append(*integer);
        } else if (const auto* real = std::get_if<double>(&value)) {
          status = static_cast<arrow::DoubleBuilder&>(*columns[f]).Append(*real);
        } else {
          status = static_cast<arrow::StringBuilder&>(*columns[f]).Append(std::get<std::string>(value));
        }
        check(status, folder, "a value");
      }
      check(geometry.Append(polygon_wkb(record.geometry)), folder, "a geometry");
      const auto& box = boxes[row];
      check(bbox.Append(), folder, "a bbox");
      const double corners[] = {box.xmin, box.ymin, box.xmax, box.ymax};
      for (int c = 0; c < 4; ++c) {
        check(static_cast<arrow::DoubleBuilder&>(*bbox.child_builder(c)).Append(corners[c]), folder, "a bbox");
      }
      if (!box.empty()) layer.part.bbox.add(box);
    }
    std::vector<std::shared_ptr<arrow::Array>> arrays;
    for (auto& builder : columns) {
      std::shared_ptr<arrow::Array> array;
      check(builder->Finish(&array), folder, "a column");
      arrays.push_back(std::move(array));
    }
    std::shared_ptr<arrow::Array> array;
    check(geometry.Finish(&array), folder, "the geometry column");
    arrays.push_back(std::move(array));
    check(bbox.Finish(&array), folder, "the bbox column");
    arrays.push_back(std::move(array));
    const auto rows = static_cast<std::int64_t>(layer.pending.size());
    const auto table = arrow::Table::Make(layer.schema, arrays, rows);
    check(layer.writer->WriteTable(*table, kRowsPerGroup), folder, "writing a row group");
    layer.part.rows += rows;
    layer.pending.clear();
    if (layer.part.rows >= kRowsPerPart) close_part(layer);
  }
};

GeoParquetDataset::GeoParquetDataset(const std::filesystem::path& folder, std::span<const RecordLayer> layers,
                                     std::span<const std::pair<std::string, std::string>> run_settings)
    : parts_(std::make_unique<Parts>()) {
  parts_->folder = folder;
  parts_->run_settings.assign(run_settings.begin(), run_settings.end());
  parts_->partial = partial_path(folder);
  std::error_code error;
  std::filesystem::remove_all(parts_->partial, error);
  if (!std::filesystem::create_directory(parts_->partial, error) || error) {
    dataset_failure(folder,
                    fmt::format("cannot make its temporary folder {}: {}", parts_->partial.string(), error.message()));
  }
  for (const auto& given : layers) {
    GeoParquetLayer layer;
    layer.name = given.name;
    layer.projjson = projjson_of(given.crs_wkt, folder);
    layer.fields.assign(given.fields.begin(), given.fields.end());
    arrow::FieldVector columns;
    for (const auto& field : layer.fields) columns.push_back(arrow::field(field.name, arrow_type(field.type), false));
    columns.push_back(arrow::field("geometry", arrow::binary(), false));
    columns.push_back(arrow::field("bbox", bbox_type(), false));
    layer.schema = arrow::schema(columns);
    parts_->layers.push_back(std::move(layer));
  }
}

GeoParquetDataset::~GeoParquetDataset() {
  if (!parts_ || parts_->committed) return;
  for (auto& layer : parts_->layers) {
    if (layer.writer) (void)layer.writer->Close();
    if (layer.stream) (void)layer.stream->Close();
  }
  std::error_code error;
  std::filesystem::remove_all(parts_->partial, error);
}

void GeoParquetDataset::append(std::size_t layer_index, std::span<const Record> records) {
  auto& layer = parts_->layers.at(layer_index);
  for (const auto& record : records) {
    if (record.values.size() != layer.fields.size())
      dataset_failure(parts_->folder, "a record that does not match its fields");
    layer.pending.push_back(record);
    if (static_cast<std::int64_t>(layer.pending.size()) >= kRowsPerGroup) parts_->write_pending(layer);
  }
}

void GeoParquetDataset::commit() {
  auto& parts = *parts_;
  for (auto& layer : parts.layers) {
    // A layer without rows still gets its part: its schema and CRS say what it would hold.
    if (!layer.pending.empty() || (!layer.writer && layer.parts_made == 0)) parts.write_pending(layer);
    if (layer.writer) parts.close_part(layer);
  }
  {
    std::ofstream manifest(parts.partial / "_manifest.json");
    manifest << manifest_json(parts.written, std::string("mgpr ") + kVersion, parts.run_settings);
    manifest.close();
    if (!manifest) dataset_failure(parts.folder, "writing its _manifest.json failed");
  }
  std::error_code error;
  std::filesystem::remove_all(parts.folder, error);
  std::filesystem::rename(parts.partial, parts.folder, error);
  if (error) dataset_failure(parts.folder, "renaming its temporary folder failed: " + error.message());
  parts.committed = true;
}

}  // namespace mgpr::runtime::output
