#include "base/status.h"

namespace tw {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kNotFound: return "not found";
    case Code::kCorrupt: return "corrupt";
    case Code::kIo: return "I/O error";
    case Code::kNotOurs: return "not a trainwatch database";
    case Code::kReadOnly: return "read-only";
    case Code::kBusy: return "busy";
    case Code::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace tw
