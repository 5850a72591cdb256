#include "core/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"

namespace kernelarc {
namespace {

using Json = nlohmann::ordered_json;

// The reference implementation refuses larger headers; so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct Entry {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct Header {
  std::vector<Entry> entries;
  uint64_t data_start = 0;
};

std::string json_type(const Json& value) {
  if (value.is_number_integer()) return "integer";
  return value.type_name();
}

[[noreturn]] void fail(const std::filesystem::path& path, std::string_view field,
                       std::string_view problem) {
  throw_input_error(path.string(), field, problem);
}

uint64_t as_offset(const std::filesystem::path& path, const std::string& field, const Json& value) {
  // The parser stores every non-negative integer as unsigned.
  if (!value.is_number_unsigned()) {
    fail(path, field, fmt::format("expected a non-negative integer, got {}", value.dump()));
  }
  return value.get<uint64_t>();
}

Entry parse_entry(const std::filesystem::path& path, const std::string& name, const Json& value,
                  uint64_t data_size) {
  const std::string field = fmt::format("tensor \"{}\"", name);
  if (!value.is_object()) fail(path, field, "expected object, got " + json_type(value));
  for (const auto& [key, unused] : value.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      fail(path, field,
           fmt::format("unknown key \"{}\" (expected dtype, shape, data_offsets)", key));
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(key)) fail(path, field, fmt::format("missing \"{}\"", key));
  }
  Entry entry;
  entry.name = name;
  const Json& dtype = value["dtype"];
  if (!dtype.is_string()) fail(path, field + ".dtype", "expected string, got " + json_type(dtype));
  const auto parsed = dtype_from_safetensors_name(dtype.get<std::string>());
  if (!parsed) {
    fail(path, field + ".dtype",
         fmt::format("unknown dtype {} (expected one of F64, F32, F16, BF16, F8_E4M3, F8_E5M2, F4, "
                     "I8, I16, I32, I64, U8, BOOL)",
                     dtype.dump()));
  }
  entry.dtype = *parsed;

  const Json& shape = value["shape"];
  if (!shape.is_array()) fail(path, field + ".shape", "expected array, got " + json_type(shape));
  uint64_t numel = 1;
  bool overflow = false;
  for (const Json& extent : shape) {
    const uint64_t dim = as_offset(path, field + ".shape", extent);
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    entry.shape.push_back(static_cast<int64_t>(dim));
    overflow = overflow || __builtin_mul_overflow(numel, dim, &numel);
  }
  if (dtype_is_packed(entry.dtype)) {
    // The header counts 4-bit values; kernelarc's shape, like torch's, counts bytes of two.
    if (entry.shape.empty() || entry.shape.back() % 2 != 0)
      fail(path, field + ".shape",
           fmt::format("F4 packs two values per byte along the last dimension, so it needs an "
                       "even last dimension, got {}",
                       shape_to_string(entry.shape)));
    entry.shape.back() /= 2;
    numel /= 2;
  }
  uint64_t expected_bytes = 0;
  overflow = overflow || __builtin_mul_overflow(numel, dtype_size(entry.dtype), &expected_bytes);
  if (overflow) fail(path, field + ".shape", "the element count overflows");

  const Json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    fail(path, field + ".data_offsets", "expected an array [begin, end], got " + offsets.dump());
  }
  entry.begin = as_offset(path, field + ".data_offsets", offsets[0]);
  entry.end = as_offset(path, field + ".data_offsets", offsets[1]);
  if (entry.begin > entry.end || entry.end > data_size) {
    fail(path, field + ".data_offsets",
         fmt::format("[{}, {}] is outside the data section of {} bytes", entry.begin, entry.end,
                     data_size));
  }
  if (entry.end - entry.begin != expected_bytes) {
    fail(path, field,
         fmt::format("holds {} bytes, but shape {} of {} needs {}", entry.end - entry.begin,
                     shape_to_string(entry.shape), dtype_name(entry.dtype), expected_bytes));
  }
  return entry;
}

void check_metadata(const std::filesystem::path& path, const Json& metadata) {
  if (!metadata.is_object()) {
    fail(path, "__metadata__", "expected object, got " + json_type(metadata));
  }
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string()) {
      fail(path, "__metadata__." + key, "expected string, got " + json_type(value));
    }
  }
}

Header read_header(const std::filesystem::path& path, std::ifstream& file) {
  std::error_code error;
  const uint64_t file_size = std::filesystem::file_size(path, error);
  if (error || !file) fail(path, "", "cannot open: " + error.message());
  if (file_size < 8) {
    fail(path, "",
         fmt::format("truncated: {} bytes, shorter than the 8-byte header length", file_size));
  }
  unsigned char length_bytes[8];
  file.read(reinterpret_cast<char*>(length_bytes), 8);
  uint64_t header_size = 0;
  for (int byte = 7; byte >= 0; --byte) header_size = (header_size << 8) | length_bytes[byte];
  if (header_size > file_size - 8 || header_size > kMaxHeaderBytes) {
    fail(path, "",
         fmt::format("header length {} exceeds the file ({} bytes)", header_size, file_size));
  }
  std::string text(header_size, '\0');
  file.read(text.data(), static_cast<std::streamsize>(header_size));
  if (!file) fail(path, "", "read error in the header");

  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::parse_error& e) {
    fail(path, "header", "invalid JSON: " + json_error_text(e));
  }
  if (!json.is_object()) fail(path, "header", "expected object, got " + json_type(json));

  Header header;
  header.data_start = 8 + header_size;
  const uint64_t data_size = file_size - header.data_start;
  for (const auto& [name, value] : json.items()) {
    if (name == "__metadata__") {
      check_metadata(path, value);
      continue;
    }
    header.entries.push_back(parse_entry(path, name, value, data_size));
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& entry : header.entries) by_offset.push_back(&entry);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (std::size_t index = 1; index < by_offset.size(); ++index) {
    if (by_offset[index]->begin < by_offset[index - 1]->end) {
      fail(path, "",
           fmt::format("tensors \"{}\" and \"{}\" overlap", by_offset[index - 1]->name,
                       by_offset[index]->name));
    }
  }
  return header;
}

HostTensor read_entry(const std::filesystem::path& path, std::ifstream& file, const Header& header,
                      const Entry& entry) {
  HostTensor tensor;
  tensor.dtype = entry.dtype;
  tensor.shape = entry.shape;
  tensor.bytes.resize(entry.end - entry.begin);
  file.seekg(static_cast<std::streamoff>(header.data_start + entry.begin));
  file.read(reinterpret_cast<char*>(tensor.bytes.data()),
            static_cast<std::streamsize>(tensor.bytes.size()));
  if (!file) fail(path, fmt::format("tensor \"{}\"", entry.name), "read error");
  return tensor;
}

[[noreturn]] void io_failure(const std::string& what, const std::filesystem::path& path) {
  throw InternalError(fmt::format("{}: {}: {}", path.string(), what, std::strerror(errno)));
}

void write_all(int fd, const void* data, std::size_t size, const std::filesystem::path& path) {
  const char* cursor = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, cursor, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      io_failure("write failed", path);
    }
    cursor += written;
    size -= static_cast<std::size_t>(written);
  }
}

std::filesystem::path temporary_beside(const std::filesystem::path& path) {
  static std::atomic<uint64_t> counter{0};
  return path.parent_path() /
         fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter.fetch_add(1));
}

}  // namespace

TensorMap read_safetensors(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  const Header header = read_header(path, file);
  TensorMap tensors;
  for (const Entry& entry : header.entries) {
    tensors[entry.name] = read_entry(path, file, header, entry);
  }
  return tensors;
}

HostTensor read_safetensors_tensor(const std::filesystem::path& path, const std::string& key) {
  std::ifstream file(path, std::ios::binary);
  const Header header = read_header(path, file);
  for (const Entry& entry : header.entries) {
    if (entry.name == key) return read_entry(path, file, header, entry);
  }
  fail(path, "", fmt::format("no tensor \"{}\"", key));
}

void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name == "__metadata__") fail(path, "", "\"__metadata__\" is reserved, not a tensor name");
    const auto expected = static_cast<std::size_t>(tensor.numel()) * dtype_size(tensor.dtype);
    if (tensor.bytes.size() != expected) {
      throw InternalError(fmt::format("{}: tensor \"{}\" holds {} bytes, its shape needs {}",
                                      path.string(), name, tensor.bytes.size(), expected));
    }
    std::vector<int64_t> shape = tensor.shape;
    if (dtype_is_packed(tensor.dtype)) {
      if (shape.empty())
        throw InternalError(fmt::format("{}: tensor \"{}\" of {} has no dimension to pack along",
                                        path.string(), name, dtype_name(tensor.dtype)));
      shape.back() *= 2;  // the header counts values, two per byte
    }
    header[name] = {{"dtype", dtype_safetensors_name(tensor.dtype)},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + tensor.bytes.size()}}};
    offset += tensor.bytes.size();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const Json::type_error& e) {
    fail(path, "", fmt::format("a tensor name or metadata value is not UTF-8: {}", e.what()));
  }
  // Padding the header to 8 bytes keeps every tensor's data 8-byte aligned in a mapped file.
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char length_bytes[8];
  for (int byte = 0; byte < 8; ++byte) length_bytes[byte] = (text.size() >> (8 * byte)) & 0xFF;

  const std::filesystem::path temporary = temporary_beside(path);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) io_failure("cannot create", temporary);
  try {
    write_all(fd, length_bytes, 8, temporary);
    write_all(fd, text.data(), text.size(), temporary);
    for (const auto& [name, tensor] : tensors) {
      write_all(fd, tensor.bytes.data(), tensor.bytes.size(), temporary);
    }
    if (::fsync(fd) != 0) io_failure("fsync failed", temporary);
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(temporary.c_str());
    io_failure("close failed", temporary);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    ::unlink(temporary.c_str());
    io_failure("rename failed", path);
  }
  // Make the rename itself durable.
  const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace kernelarc
