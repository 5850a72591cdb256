#include "diagnosis/kernel_records.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

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

std::string readable_kernel_name(const std::string& name, std::size_t max_chars) {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> demangled(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  std::string text = status == 0 && demangled ? std::string(demangled.get()) : name;
  // "ns::kernel<128, 64>(KaArgs, ...)": the template arguments say which instance; the
  // parameters are every instance's.
  if (status == 0 && !text.empty() && text.back() == ')') {
    int depth = 0;
    for (std::size_t i = text.size(); i-- > 0;) {
      depth += text[i] == ')' ? 1 : text[i] == '(' ? -1 : 0;
      if (depth == 0) {
        text.resize(i);
        break;
      }
    }
  }
  // A function template's demangled name begins with its return type, a kernel's is void.
  if (status == 0 && text.starts_with("void ")) text.erase(0, 5);
  if (text.size() > max_chars) text = text.substr(0, max_chars - 3) + "...";
  return text;
}

std::string kernels_summary(const std::vector<KernelRecord>& records, std::size_t listed) {
  std::vector<const KernelRecord*> order;
  for (const KernelRecord& record : records) order.push_back(&record);
  std::stable_sort(order.begin(), order.end(), [](const KernelRecord* a, const KernelRecord* b) {
    return a->busy_us.value_or(0) > b->busy_us.value_or(0);
  });
  std::string text;
  for (std::size_t i = 0; i < std::min(listed, order.size()); ++i) {
    text += fmt::format("{}{} x{}", i == 0 ? "" : ", ", readable_kernel_name(order[i]->name),
                        order[i]->launches);
    if (order[i]->busy_us) text += fmt::format(" {:.1f} us", *order[i]->busy_us);
  }
  if (order.size() > listed) text += fmt::format(", {} more", order.size() - listed);
  return text;
}

}  // namespace kernelarc
