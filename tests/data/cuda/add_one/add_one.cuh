// A header of the solution: NVRTC receives the solution's other sources as includable files.
#pragma once

__device__ inline float plus_one(float value) { return value + static_cast<float>(INCREMENT); }
