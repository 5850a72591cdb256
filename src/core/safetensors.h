// Reader and writer for the safetensors format: an 8-byte little-endian header length, a JSON
// header mapping names to {dtype, shape, data_offsets}, then the raw bytes.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "core/tensor.h"

namespace kernelarc {

/// Reads every tensor of a file. A truncated or malformed file raises InputError naming the file
/// and what is wrong (bad header length, unknown dtype, offsets outside the data, size mismatch).
TensorMap read_safetensors(const std::filesystem::path& path);
/// Reads one tensor by key; InputError if absent.
HostTensor read_safetensors_tensor(const std::filesystem::path& path, const std::string& key);
/// Writes atomically (temporary file, then rename), so a reader never sees half a file.
void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace kernelarc
