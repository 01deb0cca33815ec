#pragma once
// Sets environment variables for one test and unsets them when it ends.

#include <cstdlib>
#include <string>
#include <vector>

namespace chorus::test {

struct EnvGuard {
  std::vector<std::string> names;
  void set(const std::string& name, const std::string& value) {
    names.push_back(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~EnvGuard() {
    for (auto& n : names) unsetenv(n.c_str());
  }
};

}  // namespace chorus::test
