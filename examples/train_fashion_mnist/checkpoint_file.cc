#include "checkpoint_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "error_message.h"
#include "sha256.h"

namespace chorus_examples {
namespace {

constexpr char kMagic[8] = {'C', 'H', 'O', 'R', 'U', 'S', 'C', '1'};
constexpr size_t kTrailerSize = 32 + 8 + sizeof(kMagic);

[[noreturn]] void fail_errno(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string temporary_name(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

// `path.tmp.<digits>` files next to `path`: what an interrupted save leaves.
void remove_stale_temporaries(const std::string& path) {
  const auto slash = path.find_last_of('/');
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  const std::string dir = directory_of(path);
  std::vector<std::string> stale;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
          name.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
        stale.push_back(dir + "/" + name);
      }
    }
    ::closedir(d);
  }
  for (const std::string& f : stale) ::unlink(f.c_str());
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

// The archive followed by its trailer (see the header).
std::string with_trailer(const std::string& archive) {
  const Sha256Digest digest = sha256(archive.data(), archive.size());
  std::string out = archive;
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  const uint64_t size = archive.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(size >> (8 * i)));
  out.append(kMagic, sizeof(kMagic));
  return out;
}

// The archive inside a checkpoint file, once its trailer vouches for it.
std::string verified_archive(const std::string& path, const std::string& file) {
  if (file.size() < kTrailerSize || std::memcmp(file.data() + file.size() - sizeof(kMagic), kMagic, sizeof(kMagic))) {
    throw std::runtime_error(path + ": no checkpoint digest at the end of the file (" + std::to_string(file.size()) +
                             " bytes): it is truncated, or was not written by this program");
  }
  const size_t archive_size = file.size() - kTrailerSize;
  uint64_t recorded_size = 0;
  for (int i = 0; i < 8; ++i) recorded_size |= uint64_t(uint8_t(file[archive_size + 32 + i])) << (8 * i);
  if (recorded_size != archive_size) {
    throw std::runtime_error(path + ": holds " + std::to_string(archive_size) + " bytes of checkpoint data, but " +
                             std::to_string(recorded_size) + " were written: the file is damaged");
  }
  Sha256Digest recorded;
  std::memcpy(recorded.data(), file.data() + archive_size, recorded.size());
  const Sha256Digest actual = sha256(file.data(), archive_size);
  if (actual != recorded) {
    throw std::runtime_error(path + ": corrupt: the SHA-256 of its data is " + to_hex(actual) + ", the checkpoint " +
                             "was written with " + to_hex(recorded) + "; refusing to load it");
  }
  return file.substr(0, archive_size);
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

  remove_stale_temporaries(path);
  // Same directory as the target, so rename() never crosses file systems.
  const std::string tmp = temporary_name(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(tmp, "cannot create checkpoint file");
  try {
    write_all(fd, with_trailer(bytes.str()), tmp);
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
  std::ifstream in(path, std::ios::binary);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !in) fail_errno(path, "cannot read checkpoint");
  if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory, not a checkpoint");
  std::ostringstream file;
  file << in.rdbuf();
  if (in.bad()) fail_errno(path, "cannot read checkpoint");
  std::istringstream archive_bytes(verified_archive(path, file.str()));
  try {
    torch::serialize::InputArchive archive, model_archive, optimizer_archive;
    archive.load_from(archive_bytes);
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

void check_checkpoint_writable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw std::runtime_error(path + ": is a directory; --checkpoint names the file to write");
  }
  const std::string probe = temporary_name(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(path, "cannot write a checkpoint in " + directory_of(path));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace chorus_examples
