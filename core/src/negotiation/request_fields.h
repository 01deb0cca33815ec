#pragma once
// Request's fields, described once. Equality, the signature (what ranks must
// agree on: the response cache's key and the coordinator's check), the wire
// form, the checks of a decoded value, the cross-rank mismatch message and
// what fused tensors share (fusion/fusion_planner.cc) all walk kRequestFields, so a new field is its member in Request plus one
// row here (a static_assert below counts them). Only templates and
// constexpr function pointers: every walk inlines, nothing is allocated.

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "chorus/status.h"
#include "common/set_scope.h"
#include "negotiation/messages.h"

namespace chorus::detail {

/// Whether the ranks of one collective must send the same value.
enum class Agreement : uint8_t {
  kOwn,   ///< each rank's own: who sends it, the tensor's name, alltoall splits
  kSame,  ///< the same on every rank: part of the signature
  /// A vector that must be the same after its first element when the
  /// collective's first dimension varies per rank (collective_traits.h),
  /// else all of it.
  kSameAfterFirst,
};

/// What a mismatch message shows besides the requests.
struct MismatchContext {
  const SetScope& scope;
  int world_size;
};

/// How the coordinator reports ranks that disagree on a field.
struct Mismatch {
  const char* property = nullptr;  ///< "dtype differs: ..."; nullptr: another row shows this one
  std::string (*shown)(const Request& r, const MismatchContext& c) = nullptr;
  bool (*compared)(CollectiveType type) = nullptr;  ///< nullptr: for every collective
};

template <class T>
struct RequestField {
  using Type = T;
  T Request::*member;
  Agreement agreement;
  /// Decode: OK, or a Status whose message says what is wrong with the
  /// decoded value ("dtype 42"); nullptr: any value. Rows are checked in
  /// order, so a check may rely on the rows before it (the shape's byte count
  /// on a valid dtype). A valid value builds no text (an OK Status allocates
  /// nothing).
  Status (*check)(const Request& decoded) = nullptr;
  Mismatch mismatch = {};
  /// Tensors fused into one response share this value (where the row is
  /// compared for their collective: scale factors only where it reduces).
  bool fused_alike = false;
};

template <class T>
constexpr RequestField<T> field(T Request::*member, Agreement agreement,
                                Status (*check)(const Request&) = nullptr, Mismatch mismatch = {}) {
  return {member, agreement, check, mismatch};
}

template <class T>
constexpr RequestField<T> fused_alike(RequestField<T> row) {
  row.fused_alike = true;
  return row;
}

/// The rows' checks and mismatch texts (request_fields.cc).
namespace request_field {
/// Every value non-negative and, when `summed`, their sum within 64 bits
/// ("dimension 1 is -5", "splits overflow 64 bits"): a corrupt message must
/// not make a count overflow (undefined behaviour).
Status check_counts(const char* what, const std::vector<int64_t>& values, bool summed);
/// A decoded value that is wrong, as the checks say it ("dtype 42"); the
/// decoder puts it into its "malformed ..." message.
inline Status wrong_value(std::string what) { return Status::unknown_error(std::move(what)); }
Status check_rank(const Request& r);
Status check_type(const Request& r);
Status check_dtype(const Request& r);
Status check_shape(const Request& r);
Status check_op(const Request& r);
Status check_root(const Request& r);
Status check_device(const Request& r);
Status check_device_kind(const Request& r);
Status check_group_size(const Request& r);
Status check_splits(const Request& r);
Status check_members(const Request& r);
std::string show_type(const Request& r, const MismatchContext& c);
std::string show_dtype(const Request& r, const MismatchContext& c);
std::string show_shape(const Request& r, const MismatchContext& c);
std::string show_op(const Request& r, const MismatchContext& c);
std::string show_prescale(const Request& r, const MismatchContext& c);
std::string show_postscale(const Request& r, const MismatchContext& c);
std::string show_root(const Request& r, const MismatchContext& c);
std::string show_device_kind(const Request& r, const MismatchContext& c);
std::string show_group(const Request& r, const MismatchContext& c);
std::string show_members(const Request& r, const MismatchContext& c);
bool reduces(CollectiveType type);
bool is_broadcast(CollectiveType type);
bool is_registration(CollectiveType type);
}  // namespace request_field

// The rows, in wire order: the order is the format, so a new row goes last
// (and the message magic in messages.cc changes with it).
inline constexpr auto kRequestFields = [] {
  using A = Agreement;
  namespace f = request_field;
  return std::make_tuple(
      field(&Request::rank, A::kOwn, f::check_rank),
      fused_alike(field(&Request::type, A::kSame, f::check_type, {"operation", f::show_type})),
      field(&Request::name, A::kOwn),
      fused_alike(field(&Request::dtype, A::kSame, f::check_dtype, {"dtype", f::show_dtype})),
      field(&Request::shape, A::kSameAfterFirst, f::check_shape, {"shape", f::show_shape}),
      fused_alike(field(&Request::op, A::kSame, f::check_op, {"reduce op", f::show_op, f::reduces})),
      fused_alike(field(&Request::prescale, A::kSame, nullptr, {"prescale factor", f::show_prescale, f::reduces})),
      fused_alike(field(&Request::postscale, A::kSame, nullptr, {"postscale factor", f::show_postscale, f::reduces})),
      field(&Request::root_rank, A::kSame, f::check_root, {"root rank", f::show_root, f::is_broadcast}),
      field(&Request::named_root, A::kSame),  // shown with the root rank
      field(&Request::device, A::kOwn, f::check_device),  // the kind is agreed (last row), not the index
      field(&Request::group, A::kSame, nullptr, {"group", f::show_group}),
      field(&Request::group_size, A::kSame, f::check_group_size),  // shown with the group
      field(&Request::splits, A::kOwn, f::check_splits),
      field(&Request::process_set_ranks, A::kSame, f::check_members, {"member ranks", f::show_members,
                                                                        f::is_registration}),
      fused_alike(field(&Request::device_kind, A::kSame, f::check_device_kind, {"device", f::show_device_kind})),
      // Agreed, so a refused request never matches a cached signature (the
      // cache holds completed tensors only); reported before the other rows.
      field(&Request::refused, A::kSame));
}();

// Enums travel as their 32-bit values.
static_assert(sizeof(CollectiveType) == 4 && sizeof(DataType) == 4 && sizeof(ReduceOp) == 4, "32-bit enums");

/// Calls `visit(row)` for every row, in wire order.
template <class Visit>
inline void for_each_request_field(Visit&& visit) {
  std::apply([&](const auto&... row) { (visit(row), ...); }, kRequestFields);
}

/// The values of a kSameAfterFirst row agree.
inline bool same_after_first(const std::vector<int64_t>& a, const std::vector<int64_t>& b, bool first_varies) {
  if (!first_varies || a.empty() || b.empty()) return a == b;
  return a.size() == b.size() && std::equal(a.begin() + 1, a.end(), b.begin() + 1);
}

namespace request_field_count {
// How many members an aggregate has: the most initializers it takes.
struct Any {
  template <class T>
  operator T() const;
};
template <class T, class = void, size_t... I>
struct Takes : std::false_type {};
template <class T, size_t... I>
struct Takes<T, std::void_t<decltype(T{(void(I), Any{})...})>, I...> : std::true_type {};
template <class T, size_t... I>
constexpr bool takes(std::index_sequence<I...>) {
  return Takes<T, void, I...>::value;
}
template <class T, size_t N = 1>
constexpr size_t members() {
  if constexpr (!takes<T>(std::make_index_sequence<N + 1>())) return N;
  else return members<T, N + 1>();
}
}  // namespace request_field_count
static_assert(request_field_count::members<Request>() == std::tuple_size_v<decltype(kRequestFields)>,
              "every member of Request has its row in kRequestFields");

}  // namespace chorus::detail
