#pragma once
/// \file version.h
#define CHORUS_VERSION_MAJOR 0
#define CHORUS_VERSION_MINOR 1
#define CHORUS_VERSION_PATCH 0
#define CHORUS_VERSION_STRING "0.1.0"

#include "chorus/export.h"

namespace chorus {
/// Version of the library actually linked, e.g. "0.1.0".
CHORUS_API const char* version();
}  // namespace chorus
