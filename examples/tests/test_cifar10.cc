// The CIFAR-10 binary-format reader on small .bin files written here.

#include <string>
#include <vector>

#include "cifar10.h"
#include "temp_dir.h"

#include "catch_with_torch.h"  // last: after the torch headers

using chorus_examples::Cifar10;
using chorus_examples_test::TempDir;
using chorus_examples_test::write_bytes;
using Catch::Matchers::Contains;

namespace {

constexpr int kPixels = 3 * 32 * 32;

// Byte c*1024 + y*32 + x of record r: distinct, known values.
uint8_t pixel(int r, int j) { return static_cast<uint8_t>((r * 53 + j * 7) % 256); }

// Records first..first+labels.size()-1 with the given labels.
std::vector<uint8_t> records(const std::vector<uint8_t>& labels, int first = 0) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < labels.size(); ++i) {
    out.push_back(labels[i]);
    for (int j = 0; j < kPixels; ++j) out.push_back(pixel(first + static_cast<int>(i), j));
  }
  return out;
}

float normalized(uint8_t p, int channel) {
  const float mean[] = {0.4914f, 0.4822f, 0.4465f}, std[] = {0.2470f, 0.2435f, 0.2616f};
  return (p / 255.0f - mean[channel]) / std[channel];
}

}  // namespace

TEST_CASE("CIFAR-10: records from several files, in order", "[cifar10]") {
  TempDir dir;
  write_bytes(dir.file("a.bin"), records({3, 9}, 0));
  write_bytes(dir.file("b.bin"), records({0}, 2));
  Cifar10 data({dir.file("a.bin"), dir.file("b.bin")});

  REQUIRE(data.size().value() == 3);
  CHECK(data.images().sizes().vec() == std::vector<int64_t>{3, 3, 32, 32});
  CHECK(data.images().dtype() == torch::kFloat32);
  CHECK(data.labels().dtype() == torch::kInt64);
  CHECK(data.labels()[0].item<int64_t>() == 3);
  CHECK(data.labels()[1].item<int64_t>() == 9);
  CHECK(data.labels()[2].item<int64_t>() == 0);
  // Channel-major planes: byte c*1024 + y*32 + x is channel c, row y, column x.
  for (int r = 0; r < 3; ++r) {
    for (int j : {0, 1, 33, 1024, 2047, 2048 + 5 * 32 + 7, kPixels - 1}) {
      const int c = j / 1024, y = (j % 1024) / 32, x = j % 32;
      CHECK(data.images()[r][c][y][x].item<float>() == Approx(normalized(pixel(r, j), c)));
    }
  }
  CHECK(data.get(2).target.item<int64_t>() == 0);
}

TEST_CASE("CIFAR-10: the standard file names in a directory", "[cifar10]") {
  TempDir dir;
  for (int i = 1; i <= 5; ++i) write_bytes(dir.file("data_batch_" + std::to_string(i) + ".bin"), records({uint8_t(i)}));
  write_bytes(dir.file("test_batch.bin"), records({7, 8}));
  Cifar10 train(dir.path(), Cifar10::Split::kTrain);
  CHECK(train.size().value() == 5);
  CHECK(train.labels()[4].item<int64_t>() == 5);
  Cifar10 test(dir.path(), Cifar10::Split::kTest);
  CHECK(test.size().value() == 2);
  CHECK(test.labels()[1].item<int64_t>() == 8);
}

TEST_CASE("CIFAR-10: errors name the file", "[cifar10][errors]") {
  TempDir dir;
  const std::string path = dir.file("data_batch_1.bin");

  SECTION("truncated record") {
    auto bytes = records({1, 2});
    bytes.resize(bytes.size() - 100);
    write_bytes(path, bytes);
    CHECK_THROWS_WITH(Cifar10({path}), Contains(path) && Contains("truncated") && Contains("2973 bytes"));
  }
  SECTION("empty file") {
    write_bytes(path, {});
    CHECK_THROWS_WITH(Cifar10({path}), Contains(path) && Contains("empty"));
  }
  SECTION("label out of range") {
    write_bytes(path, records({1, 10}));
    CHECK_THROWS_WITH(Cifar10({path}), Contains(path) && Contains("record 1 has label 10"));
  }
  SECTION("a missing file of the training set") {
    for (int i : {1, 2, 4, 5}) write_bytes(dir.file("data_batch_" + std::to_string(i) + ".bin"), records({1}));
    CHECK_THROWS_WITH(Cifar10(dir.path(), Cifar10::Split::kTrain),
                      Contains(dir.file("data_batch_3.bin")) && Contains("cannot open"));
  }
}
