#include "checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <chorus/chorus.h>
#include <chorus/torch/broadcast_state.h>

#include "error_message.h"

namespace chorus_examples {
namespace {

[[noreturn]] void fail_errno(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void write_all(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_errno(path, "write failed");
    done += static_cast<size_t>(n);
  }
}

// The rename is durable only once the directory entry itself is on disk.
void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) fail_errno(dir, "cannot open directory to fsync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail_errno(dir, "fsync of directory failed");
}

}  // namespace

void save_checkpoint(const std::string& path, const torch::nn::Module& model,
                     const torch::optim::Optimizer& optimizer, int64_t epochs_done) {
  torch::serialize::OutputArchive archive, model_archive, optimizer_archive;
  model.save(model_archive);
  optimizer.save(optimizer_archive);
  archive.write("model", model_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("epochs_done", c10::IValue(epochs_done));
  std::ostringstream bytes;
  archive.save_to(bytes);

  // Same directory as the target, so rename() never crosses file systems.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(tmp, "cannot create checkpoint file");
  try {
    write_all(fd, bytes.str(), tmp);
    if (::fsync(fd) != 0) fail_errno(tmp, "fsync failed");
    if (::close(fd) != 0) fail_errno(tmp, "close failed");
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    fail_errno(path, "cannot rename " + tmp + " over it");
  }
  fsync_directory(directory_of(path));
}

int64_t load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  if (::access(path.c_str(), R_OK) != 0) fail_errno(path, "cannot read checkpoint");
  try {
    torch::serialize::InputArchive archive, model_archive, optimizer_archive;
    archive.load_from(path);
    archive.read("model", model_archive);
    archive.read("optimizer", optimizer_archive);
    c10::IValue epochs_done;
    archive.read("epochs_done", epochs_done);
    model.load(model_archive);
    optimizer.load(optimizer_archive);
    return epochs_done.toInt();
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not a checkpoint of this model and optimizer: " + error_message(e));
  }
}

int64_t resume_from_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer& optimizer, int root_rank) {
  int64_t epochs_done = 0;
  std::string error;
  if (chorus::rank() == root_rank) {
    try {
      epochs_done = load_checkpoint(path, model, optimizer);
    } catch (const std::exception& e) {
      error = error_message(e);
    }
  }
  // Tell every rank whether the root succeeded before any state broadcast,
  // so a bad file is one clear error everywhere instead of a hang.
  error = chorus::broadcast_object<std::string>(error, root_rank, "checkpoint.error");
  if (!error.empty()) throw std::runtime_error("--resume: " + error);
  chorus::broadcast_parameters(model, root_rank);
  chorus::broadcast_optimizer_state(optimizer, root_rank);
  return chorus::broadcast_object<int64_t>(epochs_done, root_rank, "checkpoint.epochs_done");
}

}  // namespace chorus_examples
