#include "app/instance_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/clock.h"

namespace tw::app {

namespace {

std::string LockPath(const std::string& db_path) { return db_path + ".lock"; }

struct flock WholeFile(short type) {
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = 0;
  l.l_len = 0;  // to the end, however long the file grows
  return l;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
}

}  // namespace

Result<std::unique_ptr<InstanceLock>> InstanceLock::Acquire(const std::string& db_path) {
  const std::string path = LockPath(db_path);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    const std::string why = path + ": cannot create the daemon's lock file beside the store: " + std::strerror(e);
    return e == EROFS || e == EACCES || e == EPERM ? Status(Code::kReadOnly, why) : IoError(why);
  }
  struct flock l = WholeFile(F_WRLCK);
  if (::fcntl(fd, F_OFD_SETLK, &l) != 0) {
    const int e = errno;
    std::string pid;
    std::istringstream(ReadAll(fd)) >> pid >> pid;  // "pid N"
    ::close(fd);
    if (e == EAGAIN || e == EACCES)
      return Status(Code::kBusy, "another trainwatch daemon" + (pid.empty() ? "" : " (pid " + pid + ")") +
                                     " is using the store " + db_path + " (it holds " + path +
                                     "); two would deliver every notification twice, so this one will not start");
    return IoError(path + ": cannot lock: " + std::strerror(e));
  }
  std::unique_ptr<InstanceLock> lock(new InstanceLock(fd, path));
  std::lock_guard g(lock->mu_);
  lock->Rewrite();
  return lock;
}

InstanceLock::~InstanceLock() {
  if (::ftruncate(fd_, 0) != 0) {
    // Nothing to do: whatever it says is shown only while the lock is held, which ends here.
  }
  ::close(fd_);  // releases the lock
}

void InstanceLock::SetCondition(const std::string& key, const std::string& text) {
  std::lock_guard g(mu_);
  if (text.empty()) {
    if (conditions_.erase(key) == 0) return;
  } else {
    auto [it, added] = conditions_.try_emplace(key, Condition{UnixNow(), text});
    if (!added) {
      if (it->second.text == text) return;
      it->second.text = text;
    }
  }
  Rewrite();
}

void InstanceLock::Rewrite() {
  // "pid N", then "KEY<TAB>SINCE<TAB>TEXT" per condition. Written in place, never replaced by
  // a rename: the lock belongs to this file description, a new inode would be unlocked.
  std::string out = "pid " + std::to_string(::getpid()) + "\n";
  for (const auto& [k, c] : conditions_) {
    std::string text = c.text;
    for (char& ch : text)
      if (ch == '\n' || ch == '\t') ch = ' ';
    out += k + "\t" + std::to_string(c.since) + "\t" + text + "\n";
  }
  // Best effort: the file is a window on the daemon, never what it relies on.
  if (::pwrite(fd_, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size()))
    (void)::ftruncate(fd_, static_cast<off_t>(out.size()));
}

LiveDaemon ReadLiveDaemon(const std::string& db_path) {
  LiveDaemon d;
  const int fd = ::open(LockPath(db_path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return d;
  struct flock l = WholeFile(F_WRLCK);
  const bool asked = ::fcntl(fd, F_OFD_GETLK, &l) == 0;
  if (!asked || l.l_type == F_UNLCK) {
    ::close(fd);
    if (asked) d.state = LiveDaemon::State::kStopped;
    return d;
  }
  d.state = LiveDaemon::State::kRunning;
  std::istringstream in(ReadAll(fd));
  ::close(fd);
  std::string line;
  if (std::getline(in, line) && line.starts_with("pid ")) d.pid = line.substr(4);
  while (std::getline(in, line)) {
    const size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos) continue;  // a line caught mid-rewrite
    d.conditions[line.substr(0, a)] = {std::atof(line.substr(a + 1, b - a - 1).c_str()), line.substr(b + 1)};
  }
  return d;
}

}  // namespace tw::app
