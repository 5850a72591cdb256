// A kernel template bound to one problem: the binder's output, the knob space as that problem
// and the target device constrain it, the feasibility check of a knob point against every
// workload, and the instantiation of a point into an ordinary solution for the guard.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "synth/constrained_space.h"
#include "synth/family.h"
#include "synth/kernel_template.h"

namespace kernelarc {

/// What a knob constraint may ask of the device (names MAX_THREADS, MAX_SHARED_BYTES,
/// MAX_SHARED_BYTES_PER_SM). A constraint may also name SHARED_BYTES, the launch's shared_bytes
/// at the point.
struct DeviceLimits {
  int64_t max_threads = 1024;
  int64_t max_shared_bytes = 227 << 10;  ///< per block, with the opt-in (Hopper)
  /// per multiprocessor, of which each resident block takes 1 KiB more than it asks (Hopper)
  int64_t max_shared_bytes_per_sm = 228 << 10;
};

class BoundTemplate {
 public:
  /// Throws TemplateMismatch when the template's binder rejects the problem, and InputError when
  /// a knob constraint names something that is neither a knob, a const axis, a binding constant,
  /// a device limit nor SHARED_BYTES (of a launch that has shared_bytes).
  BoundTemplate(const KernelTemplate& kernel, const Problem& problem, DeviceLimits limits = {});

  const KernelTemplate& kernel() const { return *kernel_; }
  const FamilyBinding& binding() const { return binding_; }
  const ConstrainedSpace& space() const { return space_; }
  ConstrainedSpace& space() { return space_; }

  /// Why the point cannot run on some workload (a block over the thread limit, too much shared
  /// memory, a grid dimension out of range, an expression that fails), or nullopt when it can.
  /// Cheap: evaluates the launch spec; compiles nothing.
  std::optional<std::string> infeasible(const KnobPoint& point) const;

  /// The solution for a valid point: the template's sources, its common files and the generated
  /// ka_problem.h, the knobs as kernelarc.knobs, the launch spec with the binding's sizes written
  /// out, and the provenance in kernelarc.template. `extra_files` (name -> content) are added as
  /// sources (e.g. a tuned configuration table the template includes when present).
  /// InputError when the point is not valid.
  Solution instantiate(const KnobPoint& point,
                       const std::map<std::string, std::string>& extra_files = {}) const;

  /// The knob values as the compiler sees them (enum labels as indices, bools as 0/1).
  std::map<std::string, int64_t> knob_defines(const KnobPoint& point) const;

 private:
  const KernelTemplate* kernel_;
  const Problem* problem_;
  FamilyBinding binding_;
  DeviceLimits limits_;
  OrderedJson launch_;  // the template's launch spec with sizes and constants written out
  ConstrainedSpace space_;
};

/// One template of the library considered for a problem.
struct TemplateMatch {
  const KernelTemplate* kernel = nullptr;
  /// Set when the template serves the problem: it binds and has at least one valid point.
  std::optional<BoundTemplate> bound;
  std::string reason;  ///< why not, when it does not
};

/// Every template of `library` for `target` whose families include the
/// problem's op_family, bound or with the reason it cannot be. Empty when none shares the family;
/// describe_no_template() then says why in words.
std::vector<TemplateMatch> match_templates(const std::vector<KernelTemplate>& library,
                                           const Problem& problem, DeviceKind target,
                                           DeviceLimits limits = {});

/// "problem X has no op_family ..." / "no cuda template serves op family Y (templates: ...)".
std::string describe_no_template(const std::vector<KernelTemplate>& library, const Problem& problem,
                                 DeviceKind target);

/// Replaces each identifier of `expression` that `names` maps with "(<its value>)".
std::string substitute_names(std::string_view expression,
                             const std::map<std::string, std::string>& names);

}  // namespace kernelarc
