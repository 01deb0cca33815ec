#pragma once
/// \file object_bytes.h
/// How broadcast_object and allgather_object turn a value into bytes and
/// back (Horovod pickles; C++ has no pickle for everything, so each kind of
/// value has its rule):
/// - std::string: itself;
/// - a trivially copyable value (an int, a struct of numbers): its memory;
/// - std::vector, std::map, std::unordered_map, std::pair and std::optional
///   of any of these kinds, nested as deep as you like (a vector of strings,
///   a map from names to vectors of tensors);
/// - c10::IValue (a generic dict or list, as a Python dict): torch::pickle_save;
/// - anything else torch::save / torch::load handle (torch::Tensor, a
///   module holder): torch::save's archive (a std::vector<torch::Tensor> is
///   a vector of those).
/// Every rank must name the same type; bytes that cannot be that type throw
/// chorus::InvalidArgumentError on the rank that reads them (a std::string
/// takes any bytes).

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/serialize.h>

#include "chorus/error.h"

namespace chorus::torch_object {

template <typename T>
std::string to_bytes(const T& value);
template <typename T>
T from_bytes(const std::string& bytes);

namespace detail {

template <typename T>
struct is_vector : std::false_type {};
template <typename T, typename A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <typename T>
struct is_map : std::false_type {};
template <typename K, typename V, typename C, typename A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <typename K, typename V, typename H, typename E, typename A>
struct is_map<std::unordered_map<K, V, H, E, A>> : std::true_type {};
template <typename T>
struct is_pair : std::false_type {};
template <typename A, typename B>
struct is_pair<std::pair<A, B>> : std::true_type {};
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};

// A vector of numbers (or of structs of numbers) goes as one block; not
// std::vector<bool>, which has no data().
template <typename T>
constexpr bool is_flat_vector = false;
template <typename E, typename A>
constexpr bool is_flat_vector<std::vector<E, A>> =
    std::is_trivially_copyable_v<E> && !std::is_same_v<E, bool> && !is_pair<E>::value && !is_optional<E>::value;

// Containers are checked before "trivially copyable": a std::pair of
// numbers may be either, and one rule per type keeps both sides agreeing.
template <typename T>
constexpr bool is_composite = is_vector<T>::value || is_map<T>::value || is_pair<T>::value || is_optional<T>::value;

[[noreturn]] inline void unreadable(const std::string& why) {
  throw InvalidArgumentError(Status::invalid_argument(
      "broadcast_object / allgather_object: the bytes received cannot be the type this rank asked for (" + why +
      "); do all ranks name the same type?"));
}

// A composite's parts, each as its length and its own bytes.
class Writer {
 public:
  void count(uint64_t n) { out_.append(reinterpret_cast<const char*>(&n), sizeof n); }
  template <typename T>
  void part(const T& value) {
    const std::string bytes = to_bytes(value);
    count(bytes.size());
    out_ += bytes;
  }
  void block(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  uint64_t count() {
    uint64_t n = 0;
    if (bytes_.size() - at_ < sizeof n) unreadable("a length is cut off");
    std::memcpy(&n, bytes_.data() + at_, sizeof n);
    at_ += sizeof n;
    return n;
  }
  template <typename T>
  T part() {
    const uint64_t n = count();
    if (n > bytes_.size() - at_) unreadable("a part says " + std::to_string(n) + " bytes, fewer are left");
    const std::string bytes = bytes_.substr(at_, n);
    at_ += n;
    return from_bytes<T>(bytes);
  }
  // n elements of E stored as one block: n, once checked against what is left.
  template <typename E>
  size_t block_of(uint64_t n) const {
    if (n > (bytes_.size() - at_) / sizeof(E)) {
      unreadable(std::to_string(n) + " elements of " + std::to_string(sizeof(E)) + " bytes, fewer bytes are left");
    }
    return static_cast<size_t>(n);
  }
  void copy_block(void* out, size_t size) {
    std::memcpy(out, bytes_.data() + at_, size);
    at_ += size;
  }
  void end() const {
    if (at_ != bytes_.size()) unreadable(std::to_string(bytes_.size() - at_) + " bytes left over");
  }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

template <typename T>
std::string composite_to_bytes(const T& value) {
  Writer w;
  if constexpr (is_pair<T>::value) {
    w.part(value.first);
    w.part(value.second);
  } else if constexpr (is_optional<T>::value) {
    w.count(value.has_value() ? 1 : 0);
    if (value) w.part(*value);
  } else if constexpr (is_map<T>::value) {
    w.count(value.size());
    for (const auto& [k, v] : value) {
      w.part(k);
      w.part(v);
    }
  } else if constexpr (is_flat_vector<T>) {
    w.count(value.size());
    w.block(value.data(), value.size() * sizeof(typename T::value_type));
  } else {
    w.count(value.size());
    for (const auto& element : value) w.part(element);
  }
  return w.take();
}

template <typename T>
T composite_from_bytes(const std::string& bytes) {
  Reader r(bytes);
  T out{};
  if constexpr (is_pair<T>::value) {
    auto first = r.template part<std::remove_const_t<typename T::first_type>>();
    auto second = r.template part<typename T::second_type>();
    out = T(std::move(first), std::move(second));
  } else if constexpr (is_optional<T>::value) {
    const uint64_t present = r.count();
    if (present > 1) unreadable("an optional's flag is " + std::to_string(present));
    if (present == 1) out = r.template part<typename T::value_type>();
  } else if constexpr (is_map<T>::value) {
    for (uint64_t i = 0, n = r.count(); i < n; ++i) {
      auto key = r.template part<typename T::key_type>();
      out.emplace(std::move(key), r.template part<typename T::mapped_type>());
    }
  } else if constexpr (is_flat_vector<T>) {
    const uint64_t n = r.count();
    out.resize(r.block_of<typename T::value_type>(n));
    r.copy_block(out.data(), n * sizeof(typename T::value_type));
  } else {
    for (uint64_t i = 0, n = r.count(); i < n; ++i) out.push_back(r.template part<typename T::value_type>());
  }
  r.end();
  return out;
}

}  // namespace detail

/// The bytes that stand for `value` (the rules at the top of this file).
template <typename T>
std::string to_bytes(const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else if constexpr (detail::is_composite<T>) {
    return detail::composite_to_bytes(value);
  } else if constexpr (std::is_same_v<T, c10::IValue>) {
    const std::vector<char> pickled = torch::pickle_save(value);
    return std::string(pickled.begin(), pickled.end());
  } else if constexpr (std::is_trivially_copyable_v<T>) {
    std::string bytes(sizeof(T), '\0');
    std::memcpy(bytes.data(), &value, sizeof(T));
    return bytes;
  } else {
    std::ostringstream os;
    torch::save(value, os);
    return os.str();
  }
}

/// The value to_bytes() turned into `bytes`.
template <typename T>
T from_bytes(const std::string& bytes) {
  if constexpr (std::is_same_v<T, std::string>) {
    return bytes;
  } else if constexpr (detail::is_composite<T>) {
    return detail::composite_from_bytes<T>(bytes);
  } else if constexpr (std::is_same_v<T, c10::IValue>) {
    try {
      return torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    } catch (const c10::Error& e) {
      detail::unreadable(std::string("not a pickled value: ") + e.what_without_backtrace());
    }
  } else if constexpr (std::is_trivially_copyable_v<T>) {
    if (bytes.size() != sizeof(T)) {
      detail::unreadable(std::to_string(bytes.size()) + " bytes for a value of " + std::to_string(sizeof(T)));
    }
    T out;
    std::memcpy(&out, bytes.data(), sizeof(T));
    return out;
  } else {
    std::istringstream is(bytes);
    T out;
    try {
      torch::load(out, is);
    } catch (const c10::Error& e) {
      detail::unreadable(std::string("not a torch::save archive of it: ") + e.what_without_backtrace());
    }
    return out;
  }
}

}  // namespace chorus::torch_object
