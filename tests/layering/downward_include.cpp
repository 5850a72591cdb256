// Compiled with the eval layer's include path by the Layering tests: eval depends on oracle, so
// this include must resolve (the control that shows the probe's include path is real).
#include "oracle/input_heuristics.h"
