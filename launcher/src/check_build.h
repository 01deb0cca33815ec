#pragma once
// `chorusrun --check-build`: what this Chorus was built with, in the style
// of `horovodrun --check-build`.

#include <string>

namespace chorus::launcher {

/// The report, from the build's own configuration (build_config.h).
std::string check_build_report();

}  // namespace chorus::launcher
