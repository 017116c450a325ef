// Errors as values: the convention for every decode, read, store and ingest path.
// See docs/errors.md. Exceptions are used only at the edges (CLI argument parsing,
// main()), never on the per-record path.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tw {

enum class Code {
  kOk = 0,
  kInvalidArgument,  // caller handed us something unusable (bad flag, bad SQL)
  kNotFound,         // a path or row that should exist does not
  kCorrupt,          // bytes that do not decode (bad CRC, bad protobuf, bad schema)
  kIo,               // the OS said no (open, read, stat, disk full)
  kNotOurs,          // a database that is not a trainwatch store
  kReadOnly,         // a store that cannot be written (read-only file, directory or mount)
  kBusy,             // held by another process (a second daemon on one store)
  kInternal,
};

const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status Corrupt(std::string m) { return {Code::kCorrupt, std::move(m)}; }
inline Status IoError(std::string m) { return {Code::kIo, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

// A value or the Status saying why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status status) : v_(std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }

 private:
  std::variant<T, Status> v_;
};

#define TW_RETURN_IF_ERROR(expr)          \
  do {                                    \
    ::tw::Status tw_status_ = (expr);     \
    if (!tw_status_.ok()) return tw_status_; \
  } while (0)

}  // namespace tw
