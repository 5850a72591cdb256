#include "diagnosis/kernel_records.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_fields.h"

namespace kernelarc {

namespace {

int64_t product_of(const OrderedJson& dims, const std::string& where, const std::string& field) {
  if (!dims.is_array())
    throw_input_error(where, field, "expected an array, got " + describe_json(dims));
  int64_t product = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    product *= std::max<int64_t>(expect_int(dims[i], where, field_index(field, i)), 1);
  }
  return dims.empty() ? 0 : product;
}

int64_t int_member(const OrderedJson& record, std::string_view key, const std::string& where,
                   const std::string& parent, int64_t fallback) {
  const OrderedJson* value = find_member(record, key);
  return value ? expect_int(*value, where, field_path(parent, key)) : fallback;
}

KernelRecord read_record(const OrderedJson& json, const std::string& where,
                         const std::string& field) {
  expect_object(json, where, field);
  KernelRecord record;
  if (const OrderedJson* name = find_member(json, "name")) {
    record.name = expect_string(*name, where, field_path(field, "name"));
  }
  if (const OrderedJson* grid = find_member(json, "grid")) {
    record.blocks = product_of(*grid, where, field_path(field, "grid"));
  }
  if (const OrderedJson* block = find_member(json, "block")) {
    record.threads_per_block =
        static_cast<int>(product_of(*block, where, field_path(field, "block")));
  }
  record.registers_per_thread =
      static_cast<int>(int_member(json, "registers_per_thread", where, field, 0));
  record.shared_bytes_per_block = int_member(json, "static_shared_bytes", where, field, 0) +
                                  int_member(json, "dynamic_shared_bytes", where, field, 0);
  record.local_bytes_per_thread = int_member(json, "local_bytes_per_thread", where, field, 0);
  record.launches = static_cast<int>(int_member(json, "launches", where, field, 1));
  if (const OrderedJson* busy = find_member(json, "busy_us")) {
    record.busy_us = expect_number(*busy, where, field_path(field, "busy_us"));
  }
  if (const OrderedJson* occupancy = find_member(json, "theoretical_occupancy")) {
    const std::string occupancy_field = field_path(field, "theoretical_occupancy");
    expect_object(*occupancy, where, occupancy_field);
    record.occupancy = expect_number(require_member(*occupancy, "fraction", where, occupancy_field),
                                     where, field_path(occupancy_field, "fraction"));
    if (const OrderedJson* limit = find_member(*occupancy, "limited_by")) {
      record.occupancy_limited_by =
          expect_string(*limit, where, field_path(occupancy_field, "limited_by"));
    }
  }
  return record;
}

}  // namespace

std::vector<KernelRecord> kernel_records(const OrderedJson& extra, const std::string& where) {
  std::vector<KernelRecord> records;
  if (!extra.is_object()) return records;
  const OrderedJson* kernels = find_member(extra, "kernels");
  if (!kernels) return records;
  if (!kernels->is_array()) {
    throw_input_error(where, "kernels", "expected an array, got " + describe_json(*kernels));
  }
  for (std::size_t i = 0; i < kernels->size(); ++i) {
    records.push_back(read_record((*kernels)[i], where, field_index("kernels", i)));
  }
  return records;
}

}  // namespace kernelarc
