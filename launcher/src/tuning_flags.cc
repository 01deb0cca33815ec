#include "tuning_flags.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace po = boost::program_options;

namespace chorus::launcher {

using detail::Knob;

namespace {

// What a flag in its own unit (--fusion-threshold-mb) takes.
std::string scaled_accepts(const Knob& k) { return std::string("a number of ") + k.flag_unit + " >= 0"; }

// A flag given in its own unit: a plain decimal >= 0, converted to whole
// units of the knob; the knob's own check then judges the result.
std::string scaled_value(const Knob& k, const std::string& given, std::string* value) {
  const double units = detail::is_plain_decimal(given, true) ? std::strtod(given.c_str(), nullptr) : -1;
  const double scaled = units * static_cast<double>(k.flag_scale);
  if (!(units >= 0) || scaled >= 9.2e18) return "expects " + scaled_accepts(k);
  *value = std::to_string(static_cast<long long>(std::llround(scaled)));
  return "";
}

std::string help_line(const Knob& k) {
  const std::string accepts = k.flag_unit == nullptr ? detail::knob_accepts(k) : scaled_accepts(k);
  return k.variable() + ": " + accepts + " (default " + k.default_text + ")";
}

}  // namespace

std::string tuning_flag(const Knob& k) {
  if (k.flag != nullptr) return k.flag;
  std::string flag = k.name;
  for (char& c : flag) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return flag;
}

void add_tuning_flags(po::options_description* options) {
  for (const Knob& k : detail::knobs()) {
    if (!k.launcher_flag) continue;
    const std::string flag = tuning_flag(k);
    // On/off knobs are horovodrun's switches (--autotune): given alone they
    // mean 1; a value may follow (--autotune 0, --autotune=0).
    auto* value = po::value<std::string>();
    if (k.kind == detail::KnobKind::kSwitch) value->implicit_value("1");
    options->add_options()(flag.c_str(), value, help_line(k).c_str());
  }
}

std::string tuning_knobs(const po::variables_map& vm, std::vector<std::pair<std::string, std::string>>* knobs) {
  for (const Knob& k : detail::knobs()) {
    if (!k.launcher_flag) continue;
    const std::string flag = tuning_flag(k);
    if (!vm.count(flag)) continue;
    const std::string given = vm[flag].as<std::string>();
    std::string value = given, why;
    if (k.flag_unit != nullptr) why = scaled_value(k, given, &value);
    RuntimeOptions scratch;
    if (why.empty()) why = k.apply(k, value, &scratch).message();
    if (why.empty() && k.kind == detail::KnobKind::kText && value.empty()) why = "expects a value";
    if (!why.empty()) return "--" + flag + " '" + given + "': " + why;
    knobs->emplace_back(k.variable(), value);
  }
  return "";
}

}  // namespace chorus::launcher
