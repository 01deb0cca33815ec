#pragma once
// Captures what this process writes to stderr (the Logger's lines), from
// every thread, while in scope.
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace chorus::test {

class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()) {
    if (!file_) throw std::runtime_error("tmpfile() failed");
    std::fflush(stderr);
    saved_ = dup(fileno(stderr));
    dup2(fileno(file_), fileno(stderr));
  }
  ~StderrCapture() { restore(); std::fclose(file_); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  /// Everything written so far; the capture goes on.
  std::string text() {
    std::fflush(stderr);
    std::string out;
    std::rewind(file_);
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), file_)) > 0) out.append(buf, n);
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    dup2(saved_, fileno(stderr));
    close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_ = -1;
};

}  // namespace chorus::test
