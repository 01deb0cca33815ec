#pragma once
// Whole numbers read from text that came from elsewhere (another machine's
// message, an etcd answer, a variable): decimal digits only, an optional
// '-', nothing before or after, inside a range; what strtoll or atoi would
// also take (blanks, '+', 0x, trailing text, overflow) is refused.

#include <cstdint>
#include <string>

namespace chorus::detail {

bool whole_number(const std::string& text, int64_t lowest, int64_t highest, int64_t* out);
bool whole_unsigned(const std::string& text, uint64_t* out);

}  // namespace chorus::detail
