#pragma once
/// \file idx_file.h
/// Reading one IDX file of unsigned bytes (the MNIST / Fashion-MNIST format),
/// gzipped or not. No torch here: the format check is plain C++.

#include <cstdint>
#include <string>
#include <vector>

namespace chorus_examples {

/// The contents of an IDX file: its dimensions and its bytes, row-major.
struct IdxFile {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Reads `path` (gzip or plain: zlib reads both). The header must say
/// unsigned bytes (type 0x08) with `expected_rank` dimensions, and the file
/// must hold exactly the bytes its dimensions announce. Throws
/// std::runtime_error naming the file on any problem (missing, bad magic,
/// wrong rank, truncated, trailing bytes, corrupt gzip stream).
IdxFile read_idx_file(const std::string& path, int expected_rank);

}  // namespace chorus_examples
