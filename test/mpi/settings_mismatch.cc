// Run under mpirun's MPMD syntax (or over TCP with per-rank variables,
// test/tcp/tcp_settings_mismatch.sh) with settings that must agree set
// differently per rank: init() must fail on every rank (no hang) with a
// message containing every argument (the setting's name and each rank's
// value). Exit 0 only then, so mpirun's status says whether all ranks saw it.
#include <cstdio>
#include <string>

#include "chorus/chorus.h"

int main(int argc, char** argv) {
  try {
    chorus::init();
  } catch (const chorus::InvalidArgumentError& e) {
    const std::string message = e.what();
    for (int i = 1; i < argc; ++i) {
      if (message.find(argv[i]) == std::string::npos) {
        std::fprintf(stderr, "settings_mismatch: the error lacks '%s': %s\n", argv[i], message.c_str());
        return 1;
      }
    }
    std::printf("settings_mismatch: init refused as expected: %s\n", message.c_str());
    return 0;
  }
  std::fprintf(stderr, "settings_mismatch: init() succeeded with differing settings\n");
  chorus::shutdown();
  return 1;
}
