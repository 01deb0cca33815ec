// The Fashion-MNIST reader on small IDX files written here, gzipped with
// zlib (as the Debian package ships them) and plain.

#include <zlib.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fashion_mnist.h"
#include "idx_file.h"
#include "temp_dir.h"

#include "catch_with_torch.h"  // last: after the torch headers

using chorus_examples::FashionMnist;
using chorus_examples_test::TempDir;
using Catch::Matchers::Contains;

namespace {

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

// An IDX file of unsigned bytes: magic 0x0000080<rank>, big-endian sizes, data.
std::vector<uint8_t> idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data,
                               uint32_t magic = 0) {
  std::vector<uint8_t> out;
  put_u32(out, magic ? magic : 0x00000800u | static_cast<uint32_t>(dims.size()));
  for (uint32_t d : dims) put_u32(out, d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// Pixel j of image i: distinct, known values.
uint8_t pixel(int i, int j) { return static_cast<uint8_t>((i * 31 + j) % 256); }

std::vector<uint8_t> image_data(int n) {
  std::vector<uint8_t> data;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 28 * 28; ++j) data.push_back(pixel(i, j));
  return data;
}

// Writes <dir>/<prefix>-{images-idx3,labels-idx1}-ubyte.gz.
void write_split(const TempDir& dir, const std::string& prefix, int images, const std::vector<uint8_t>& labels) {
  write_gz(dir.file(prefix + "-images-idx3-ubyte.gz"),
           idx_bytes({static_cast<uint32_t>(images), 28, 28}, image_data(images)));
  write_gz(dir.file(prefix + "-labels-idx1-ubyte.gz"), idx_bytes({static_cast<uint32_t>(labels.size())}, labels));
}

float normalized(uint8_t p) { return (p / 255.0f - 0.2860f) / 0.3530f; }

}  // namespace

TEST_CASE("IDX reader: dimensions and bytes, gzipped and plain", "[idx]") {
  TempDir dir;
  const auto bytes = idx_bytes({2, 3}, {1, 2, 3, 4, 5, 6});
  write_gz(dir.file("a.gz"), bytes);
  chorus_examples_test::write_bytes(dir.file("a"), bytes);
  for (const char* name : {"a.gz", "a"}) {
    const auto idx = chorus_examples::read_idx_file(dir.file(name), 2);
    CHECK(idx.dims == std::vector<int64_t>{2, 3});
    CHECK(idx.data == std::vector<uint8_t>{1, 2, 3, 4, 5, 6});
  }
}

TEST_CASE("Fashion-MNIST: images normalized, labels int64", "[fashion_mnist]") {
  TempDir dir;
  write_split(dir, "train", 3, {9, 0, 4});
  write_split(dir, "t10k", 2, {1, 7});

  FashionMnist train(dir.path(), FashionMnist::Split::kTrain);
  REQUIRE(train.size().value() == 3);
  CHECK(train.images().sizes().vec() == std::vector<int64_t>{3, 1, 28, 28});
  CHECK(train.images().dtype() == torch::kFloat32);
  CHECK(train.labels().dtype() == torch::kInt64);
  CHECK(train.labels()[0].item<int64_t>() == 9);
  CHECK(train.labels()[2].item<int64_t>() == 4);
  for (int i : {0, 2}) {
    for (int j : {0, 1, 28 * 28 - 1}) {
      CHECK(train.images()[i][0][j / 28][j % 28].item<float>() == Approx(normalized(pixel(i, j))));
    }
  }
  const auto example = train.get(1);
  CHECK(example.data.sizes().vec() == std::vector<int64_t>{1, 28, 28});
  CHECK(example.target.item<int64_t>() == 0);

  FashionMnist test(dir.path(), FashionMnist::Split::kTest);
  CHECK(test.size().value() == 2);
  CHECK(test.labels()[1].item<int64_t>() == 7);
}

TEST_CASE("Fashion-MNIST: unpacked files work too", "[fashion_mnist]") {
  TempDir dir;
  chorus_examples_test::write_bytes(dir.file("train-images-idx3-ubyte"), idx_bytes({2, 28, 28}, image_data(2)));
  chorus_examples_test::write_bytes(dir.file("train-labels-idx1-ubyte"), idx_bytes({2}, {3, 5}));
  FashionMnist train(dir.path(), FashionMnist::Split::kTrain);
  CHECK(train.size().value() == 2);
  CHECK(train.labels()[1].item<int64_t>() == 5);
}

TEST_CASE("Fashion-MNIST: errors name the file", "[fashion_mnist][errors]") {
  TempDir dir;
  const std::string images = dir.file("train-images-idx3-ubyte.gz");
  const std::string labels = dir.file("train-labels-idx1-ubyte.gz");
  auto load = [&] { FashionMnist(dir.path(), FashionMnist::Split::kTrain); };

  SECTION("missing files") {
    CHECK_THROWS_WITH(load(), Contains(images) && Contains("not found"));
  }
  SECTION("bad magic number (a labels file where images belong)") {
    write_gz(images, idx_bytes({3}, {1, 2, 3}));
    write_gz(labels, idx_bytes({3}, {1, 2, 3}));
    CHECK_THROWS_WITH(load(), Contains(images) && Contains("bad magic number 0x00000801"));
  }
  SECTION("bad element type in the magic number") {
    write_gz(images, idx_bytes({1, 28, 28}, image_data(1), 0x00000D03u));  // float32
    write_gz(labels, idx_bytes({1}, {0}));
    CHECK_THROWS_WITH(load(), Contains(images) && Contains("bad magic number"));
  }
  SECTION("data shorter than the header says") {
    auto data = image_data(3);
    data.resize(data.size() - 100);
    write_gz(images, idx_bytes({3, 28, 28}, data));
    write_gz(labels, idx_bytes({3}, {1, 2, 3}));
    CHECK_THROWS_WITH(load(), Contains(images) && Contains("truncated"));
  }
  SECTION("header cut short") {
    auto bytes = idx_bytes({3, 28, 28}, {});
    bytes.resize(9);
    write_gz(images, bytes);
    write_gz(labels, idx_bytes({3}, {1, 2, 3}));
    CHECK_THROWS_WITH(load(), Contains(images) && Contains("truncated"));
  }
  SECTION("gzip stream cut short") {
    write_gz(images, idx_bytes({3, 28, 28}, image_data(3)));
    write_gz(labels, idx_bytes({3}, {1, 2, 3}));
    std::ifstream in(images, std::ios::binary);
    std::vector<uint8_t> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    gz.resize(gz.size() / 2);
    chorus_examples_test::write_bytes(images, gz);
    CHECK_THROWS_WITH(load(), Contains(images));
  }
  SECTION("trailing bytes") {
    auto data = image_data(2);
    data.push_back(7);
    write_gz(images, idx_bytes({2, 28, 28}, data));
    write_gz(labels, idx_bytes({2}, {1, 2}));
    CHECK_THROWS_WITH(load(), Contains(images) && Contains("trailing"));
  }
  SECTION("images that are not 28x28") {
    write_gz(images, idx_bytes({1, 27, 28}, std::vector<uint8_t>(27 * 28, 1)));
    write_gz(labels, idx_bytes({1}, {1}));
    CHECK_THROWS_WITH(load(), Contains(images) && Contains("27x28"));
  }
  SECTION("label out of range") {
    write_gz(images, idx_bytes({2, 28, 28}, image_data(2)));
    write_gz(labels, idx_bytes({2}, {1, 10}));
    CHECK_THROWS_WITH(load(), Contains(labels) && Contains("label 10 at index 1"));
  }
  SECTION("image and label counts disagree") {
    write_gz(images, idx_bytes({3, 28, 28}, image_data(3)));
    write_gz(labels, idx_bytes({2}, {1, 2}));
    CHECK_THROWS_WITH(load(), Contains(images) && Contains(labels) && Contains("3 images but"));
  }
}
