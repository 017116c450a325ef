// Who writes an event file, from its name, and whether that process still runs on this host.
// TensorBoard writers (TF, PyTorch, tensorboardX) name their files
// events.out.tfevents.<unix secs>.<host>.<pid>.<counter>[.v2]: the writer says who it is. The
// name parse is one function (tw_writer_alive and the run lifecycle ask the same question);
// the host question (kill(2), /proc) is a function the daemon passes down, so diagnosis is
// tested with a fake host as well as the real one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tw {

struct WriterId {
  double created = 0;  // the name's unix seconds: when the writer opened the file
  std::string host;    // as the writer's gethostname() said it
  int64_t pid = 0;
};

// The writer a file's name (or path) says, or nothing when the name does not say one.
std::optional<WriterId> ParseWriterId(std::string_view path);

enum class WriterState {
  kUnknown,  // another host, or nothing to tell by: never taken as gone
  kAlive,
  kGone,     // no such process on this host, or one that started after the file was created
};
const char* WriterStateName(WriterState s);  // unknown, alive, gone

// How a writer is judged: the real host (ProbeThisHost), or a test's.
using WriterProbe = std::function<WriterState(const WriterId&)>;

// This host: the writer's host must be this one (its first label compared, as containers and
// clusters mix short and full names); then a pid that exists (kill 0, or EPERM) is alive,
// unless the process started more than a few seconds after the file was created: a pid reused
// by another process since, which is not the writer (/proc/<pid>/stat's start time; where
// /proc is not readable, the pid alone decides).
WriterState ProbeThisHost(const WriterId& w);

}  // namespace tw
