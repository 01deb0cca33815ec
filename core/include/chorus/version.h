#pragma once
/// \file version.h
#define CHORUS_VERSION_MAJOR 0
#define CHORUS_VERSION_MINOR 3
#define CHORUS_VERSION_PATCH 0
#define CHORUS_VERSION_STRING "0.3.0"

#include "chorus/export.h"

namespace chorus {
/// Version of the library actually linked, e.g. "0.3.0".
CHORUS_API const char* version();
}  // namespace chorus
