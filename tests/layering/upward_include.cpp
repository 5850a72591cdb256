// Compiled with the eval layer's include path by the Layering tests: optimize sits above eval,
// so this include must fail to resolve.
#include "optimize/agent.h"
