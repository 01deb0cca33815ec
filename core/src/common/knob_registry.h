#pragma once
// The one registry of Chorus's knobs: each knob's name (read as CHORUS_<NAME>,
// or HOROVOD_<NAME> when that is unset), default, what it accepts, whether
// every rank must have the same value, and how it sets RuntimeOptions.
// Pure (no environment, no MPI), so three users share it: the core reads the
// environment through it (common/env_params.h) and compares the job-wide
// knobs across ranks (comm/agreed_settings.h), chorusrun makes its tuning
// flags from it (launcher/src/tuning_flags.cc), and docs/tuning.md's table is
// generated from it (test/docs/knob_docs.cc; the test knob_tables_in_docs keeps the
// doc true). A new knob is one row in knob_registry.cc.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chorus/options.h"
#include "chorus/status.h"

namespace chorus::detail {

/// How a knob's value is spelled.
enum class KnobKind : uint8_t {
  kWhole,    ///< a plain whole number in [lo, hi] (and a multiple of `multiple_of`)
  kDecimal,  ///< a plain decimal number in [lo, hi]
  kSwitch,   ///< 0 or 1 (also true/false, yes/no, on/off)
  kChoice,   ///< one of `choices` (any letter case)
  kText,     ///< any text
};

/// Who must agree on a knob's value.
enum class KnobScope : uint8_t {
  kPerRank,  ///< each rank may have its own
  kJobWide,  ///< it decides what travels between ranks: init() fails unless every rank has the same value
};

/// One spelling of a choice knob's value; several may share a value ("warn").
struct KnobChoice {
  const char* text;
  int value;
};

struct Knob {
  const char* name;          ///< without prefix, e.g. "FUSION_THRESHOLD"
  const char* default_text;  ///< as docs and --help show it
  KnobKind kind;
  KnobScope scope;
  const char* description;   ///< for docs/tuning.md (Markdown)
  int64_t lo = 0, hi = 0;    ///< numbers: the accepted range
  int64_t multiple_of = 1;   ///< whole numbers: must be a multiple of this
  const char* unit = "";     ///< numbers: "bytes"; text: what it is ("a file path")
  const KnobChoice* choices = nullptr;
  size_t choice_count = 0;
  /// chorusrun's flag, when not the name in lower case with dashes
  /// (Horovod's spellings: "cycle-time-ms"), and the unit it takes when not
  /// the knob's (--fusion-threshold-mb: "MiB", 1 MiB per unit).
  const char* flag = nullptr;
  int64_t flag_scale = 1;
  const char* flag_unit = nullptr;
  /// Parses `text` into `options`; when it does not fit, an InvalidArgument
  /// whose message says what was expected ("expected 0 or 1").
  Status (*apply)(const Knob& knob, const std::string& text, RuntimeOptions* options) = nullptr;
  /// The field's value in `options` as text `apply` takes, so check_options
  /// judges options built in code by the same rules; nullptr for text knobs.
  std::string (*current)(const Knob& knob, const RuntimeOptions& options) = nullptr;
  /// Job-wide knobs: the value ranks compare (whole numbers; a choice's value;
  /// a decimal times `value_per_unit`, e.g. seconds as milliseconds).
  int64_t (*value)(const RuntimeOptions& options) = nullptr;
  int64_t value_per_unit = 1;
  /// False for a knob no chorusrun flag may carry (a secret has no place
  /// on a command line).
  bool launcher_flag = true;

  std::string variable() const { return std::string("CHORUS_") + name; }
};

/// Every knob, in documentation order.
const std::vector<Knob>& knobs();

/// The knob called `name` (without prefix), or nullptr.
const Knob* find_knob(const std::string& name);

/// What `knob` accepts, as errors and docs say it: "a whole number of bytes
/// in 0..16777216", "auto, shm, ring or mpi".
std::string knob_accepts(const Knob& knob);

/// A job-wide knob's compared value as the user writes it ("ring", "8").
std::string knob_value_text(const Knob& knob, int64_t value);

/// True when `text` is a plain decimal number: an optional '-', digits and,
/// when `fraction`, an optional fraction and exponent; nothing else (no
/// blanks, '+', hex, "nan" or "inf").
bool is_plain_decimal(const std::string& text, bool fraction);

}  // namespace chorus::detail
