#include "exit_record_dir.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "build_config.h"

namespace chorus::launcher {

std::string exit_record_dir_pattern() {
  const char* base = std::getenv("TMPDIR");
  return std::string(base && *base ? base : "/tmp") + "/chorusrun-exits-XXXXXX";
}

std::string make_exit_record_dir(std::string* error) {
  std::string pattern = exit_record_dir_pattern();
  if (mkdtemp(pattern.data()) == nullptr) {
    *error = "cannot create a folder like " + pattern + " for the ranks' exit records: " + std::strerror(errno);
    return "";
  }
  return pattern;
}

void remove_exit_record_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  for (const std::string& n : names) unlink((dir + "/" + n).c_str());
  rmdir(dir.c_str());
}

std::string find_exit_hook(const std::string& chorusrun_path) {
  const auto slash = chorusrun_path.find_last_of('/');
  const std::string bin_dir = slash == std::string::npos ? "." : chorusrun_path.substr(0, slash);
  for (const std::string& candidate : {bin_dir + "/" + CHORUS_EXIT_HOOK_NAME,
                                       bin_dir + "/" + CHORUS_EXIT_HOOK_FROM_BINDIR}) {
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace chorus::launcher
