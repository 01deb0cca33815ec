// The checkpoint file: written with a SHA-256 trailer and verified on load,
// so flipped bytes or a cut-off file are refused naming the file; leftovers
// of an interrupted save are removed by the next save; an unwritable
// --checkpoint is found before training.

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "checkpoint_file.h"
#include "sha256.h"
#include "temp_dir.h"

#include "catch_with_torch.h"  // last: after the torch headers

using chorus_examples::check_checkpoint_writable;
using chorus_examples::load_checkpoint;
using chorus_examples::save_checkpoint;
using chorus_examples_test::TempDir;
using Catch::Matchers::Contains;

namespace {

struct Trainable {
  torch::nn::Linear model{4, 3};
  torch::optim::SGD sgd{model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)};
};

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace

TEST_CASE("A checkpoint loads back what was saved", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.pt");
  Trainable saved, loaded;
  save_checkpoint(path, *saved.model, saved.sgd, 7);
  REQUIRE(load_checkpoint(path, *loaded.model, loaded.sgd) == 7);
  REQUIRE(torch::equal(saved.model->weight, loaded.model->weight));
  REQUIRE(torch::equal(saved.model->bias, loaded.model->bias));
}

TEST_CASE("A checkpoint with flipped bytes is refused, naming the file", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.pt");
  Trainable t;
  save_checkpoint(path, *t.model, t.sgd, 1);
  std::vector<char> bytes = read_file(path);
  // Bytes in the middle of the archive: tensor data LibTorch would load as is.
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 3; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
  write_file(path, bytes);
  REQUIRE_THROWS_WITH(load_checkpoint(path, *t.model, t.sgd), Contains(path + ": corrupt: the SHA-256"));
}

TEST_CASE("A truncated checkpoint is refused, naming the file", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.pt");
  Trainable t;
  save_checkpoint(path, *t.model, t.sgd, 1);
  const std::vector<char> bytes = read_file(path);
  for (size_t keep : {bytes.size() - 1, bytes.size() / 2, size_t{10}, size_t{0}}) {
    INFO(keep);
    write_file(path, std::vector<char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)));
    REQUIRE_THROWS_WITH(load_checkpoint(path, *t.model, t.sgd),
                        Contains(path + ": no checkpoint digest at the end of the file"));
  }
  REQUIRE_THROWS_WITH(load_checkpoint(dir.file("none.pt"), *t.model, t.sgd),
                      Contains(dir.file("none.pt") + ": cannot read checkpoint"));
}

TEST_CASE("The next save removes temporary files an interrupted save left", "[checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("model.pt");
  for (const char* name : {"model.pt.tmp.12345", "model.pt.tmp.1", "model.pt.tmp.x", "other.pt.tmp.5"}) {
    write_file(dir.file(name), {'p', 'a', 'r', 't'});
  }
  Trainable t;
  save_checkpoint(path, *t.model, t.sgd, 2);
  REQUIRE_FALSE(exists(dir.file("model.pt.tmp.12345")));
  REQUIRE_FALSE(exists(dir.file("model.pt.tmp.1")));
  // Not what a save of this checkpoint leaves: kept.
  REQUIRE(exists(dir.file("model.pt.tmp.x")));
  REQUIRE(exists(dir.file("other.pt.tmp.5")));
  REQUIRE(load_checkpoint(path, *t.model, t.sgd) == 2);
}

TEST_CASE("An unwritable checkpoint path is found before training", "[checkpoint]") {
  TempDir dir;
  const std::string missing = dir.file("no-such-dir/model.pt");
  REQUIRE_THROWS_WITH(check_checkpoint_writable(missing),
                      Contains(missing + ": cannot write a checkpoint in " + dir.file("no-such-dir")));
  REQUIRE_THROWS_WITH(check_checkpoint_writable(dir.path()), Contains(dir.path() + ": is a directory"));
  check_checkpoint_writable(dir.file("model.pt"));
  // The check leaves nothing behind.
  REQUIRE(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("SHA-256 matches the FIPS 180-4 examples", "[checkpoint]") {
  using chorus_examples::sha256;
  using chorus_examples::to_hex;
  REQUIRE(to_hex(sha256("abc", 3)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  REQUIRE(to_hex(sha256("", 0)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  REQUIRE(to_hex(sha256(two_blocks.data(), two_blocks.size())) ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
