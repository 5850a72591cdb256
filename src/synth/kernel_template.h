// A kernel template: real source files plus a knob spec, the op families it serves and how it
// is built and launched. It lives in its own directory of the template library
// (templates/<target>/<name>/):
//
//   template.json   {"name": "rownorm_cuda",
//                    "description": "...",
//                    "target": "cuda" | "cpu",
//                    "families": ["rmsnorm", "layernorm"],
//                    "build": "nvrtc" | "shared_object",
//                    "sources": ["kernel.cu"],          (entry file first; relative)
//                    "common": ["ka_math.h"],           (files of templates/common to add)
//                    "entry_point": "ka_rownorm",       (kernel name for nvrtc, function for
//                                                        shared_object)
//                    "launch": {"grid": [...], "block": [...], "shared_bytes": "..."},
//                                                       (nvrtc only; expressions over axes,
//                                                        knobs and the binding's names)
//                    "cflags": [], "cuda_cflags": [], "ld_flags": [], "arch": "sm_90a"?,
//                    "workspace_bytes": 33554432?,      (scratch memory, as in a solution)
//                    "knobs": "knobs.json"}
//   knobs.json      the knob space (synth/knob_space.h); constraints may also name the
//                   binding's constants (e.g. ELEM_BYTES), device limits (MAX_THREADS,
//                   MAX_SHARED_BYTES, MAX_SHARED_BYTES_PER_SM) and SHARED_BYTES, the
//                   launch's shared_bytes at the point.
//   <sources>       compiled with -D<KNOB>=<value> for every knob (enum: its index; the
//                   generated header defines KA_<KNOB>_<LABEL> as each label's index) and with
//                   the generated "ka_problem.h" (synth/family.h) beside them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/device_kind.h"
#include "core/problem.h"
#include "synth/knob_space.h"

namespace kernelarc {

enum class TemplateBuild { Nvrtc, SharedObject };

struct KernelTemplate {
  std::string name;
  std::string description;
  DeviceKind target = DeviceKind::Cpu;  ///< the "target" field ("cuda" or "cpu")
  std::vector<std::string> families;
  TemplateBuild build = TemplateBuild::SharedObject;
  std::vector<std::string> sources;  ///< relative to dir, entry file first
  std::vector<std::string> common;   ///< relative to the library's common/ directory
  std::string entry_point;
  OrderedJson launch;  ///< {} unless build == Nvrtc
  /// Scratch memory the solution asks for: an integer or an expression over axes and knobs
  /// (copied into the solution's kernelarc.workspace_bytes); null when none.
  OrderedJson workspace_bytes;
  std::vector<std::string> cflags, cuda_cflags, ld_flags;
  std::string arch;  ///< empty = the device's
  KnobSpace knobs;
  std::filesystem::path dir;
  std::filesystem::path common_dir;

  bool serves(std::string_view family) const;
};

/// Reads <dir>/template.json and its knob spec. InputError naming the file and field.
KernelTemplate load_template(const std::filesystem::path& dir,
                             const std::filesystem::path& common_dir);

/// Every template under <root>/cuda/* and <root>/cpu/*, sorted by name; <root>/common holds the
/// shared files. InputError on a malformed template or a duplicate name.
std::vector<KernelTemplate> load_template_library(const std::filesystem::path& root);

/// Leaves out of every template's space the knob values that trade accuracy the reference keeps
/// (KnobSpace::keeping_accuracy): `--keep-accuracy`.
void keep_accuracy(std::vector<KernelTemplate>& library);

/// The bundled library: $KERNELARC_TEMPLATES, else data_dir()/templates (core/paths.h).
std::filesystem::path default_template_root();

}  // namespace kernelarc
