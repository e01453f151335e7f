// The native entries' operand checks live in src/core/kcheck.h, shared by every device's kernels
// (a device's kernels include core only); this name keeps the CPU files' includes short.
#pragma once
#include "../../core/kcheck.h"
