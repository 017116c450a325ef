#include "watch/inotify_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <boost/asio/read.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/log.h"
#include "base/source_names.h"

namespace tw::watch {

namespace fs = std::filesystem;

namespace {
constexpr uint32_t kDirMask = IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM |
                              IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF |
                              IN_ONLYDIR | IN_EXCL_UNLINK;
}  // namespace

InotifyWatcher::InotifyWatcher(boost::asio::io_context& io, FileFn on_file,
                               OverflowFn on_overflow)
    : fd_(io), on_file_(std::move(on_file)), on_overflow_(std::move(on_overflow)),
      buf_(64 * 1024) {}

InotifyWatcher::~InotifyWatcher() = default;

Status InotifyWatcher::Start() {
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    degraded_reason_ = std::string("inotify_init1 failed: ") + std::strerror(errno);
    return IoError(degraded_reason_);
  }
  fd_.assign(fd);
  ReadSome();
  return Status::Ok();
}

bool InotifyWatcher::AddOne(const std::string& dir) {
  if (dir_to_wd_.count(dir)) return false;
  if (!fd_.is_open()) return false;
  const int wd = ::inotify_add_watch(fd_.native_handle(), dir.c_str(), kDirMask);
  if (wd < 0) {
    if (errno == ENOSPC && degraded_reason_.empty()) {
      degraded_reason_ = "the inotify watch limit is reached";
      log::Warning(
          "inotify: the per-user watch limit is reached (" + std::to_string(wd_to_dir_.size()) +
          " watches); new directories are picked up by the periodic rescan only. Raise it with: "
          "sysctl fs.inotify.max_user_watches=524288 (persist in /etc/sysctl.d/)");
    } else if (errno != ENOENT && errno != ENOTDIR) {
      log::Debug("inotify: cannot watch " + dir + ": " + std::strerror(errno));
    }
    return false;
  }
  // A directory replaced at the same path gets the same wd back only if it is the same inode.
  if (auto old = wd_to_dir_.find(wd); old != wd_to_dir_.end()) dir_to_wd_.erase(old->second);
  wd_to_dir_[wd] = dir;
  dir_to_wd_[dir] = wd;
  return true;
}

std::vector<std::string> InotifyWatcher::AddTree(const std::string& dir) {
  std::vector<std::string> files;
  const bool fresh = AddOne(dir);
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_directory(e2)) {
      if (!it->is_symlink(e2)) AddOne(it->path().native());
    } else if (fresh && sources::IsSourcePath(it->path().native())) {
      files.push_back(it->path().native());
    }
  }
  return files;
}

size_t InotifyWatcher::EnsureWatched(const std::vector<std::string>& dirs) {
  size_t added = 0;
  for (const auto& d : dirs)
    if (!dir_to_wd_.count(d) && AddOne(d)) ++added;
  return added;
}

void InotifyWatcher::RemoveTree(const std::string& root) {
  const std::string prefix = root + "/";
  for (auto it = dir_to_wd_.begin(); it != dir_to_wd_.end();) {
    if (it->first == root || it->first.starts_with(prefix)) {
      if (fd_.is_open()) ::inotify_rm_watch(fd_.native_handle(), it->second);
      wd_to_dir_.erase(it->second);
      it = dir_to_wd_.erase(it);
    } else {
      ++it;
    }
  }
}

void InotifyWatcher::ReadSome() {
  fd_.async_read_some(boost::asio::buffer(buf_), [this](boost::system::error_code ec, size_t n) {
    if (ec) {
      if (ec != boost::asio::error::operation_aborted)
        log::Error("inotify: read failed: " + ec.message() + "; relying on rescans");
      return;
    }
    for (size_t off = 0; off + sizeof(inotify_event) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf_.data() + off);
      const std::string name = ev->len ? std::string(ev->name) : std::string();
      Handle(ev->wd, ev->mask, name);
      off += sizeof(inotify_event) + ev->len;
    }
    ReadSome();
  });
}

void InotifyWatcher::Handle(int wd, uint32_t mask, const std::string& name) {
  if (mask & IN_Q_OVERFLOW) {
    log::Warning("inotify: event queue overflowed; rescanning everything");
    if (on_overflow_) on_overflow_();
    return;
  }
  auto it = wd_to_dir_.find(wd);
  if (it == wd_to_dir_.end()) return;
  const std::string dir = it->second;
  if (mask & IN_IGNORED) {  // the directory is gone (deleted, or its filesystem unmounted)
    dir_to_wd_.erase(dir);
    wd_to_dir_.erase(wd);
    return;
  }
  if (name.empty()) return;  // IN_DELETE_SELF / IN_MOVE_SELF: IN_IGNORED or a rescan follows
  const std::string path = dir + "/" + name;
  if (mask & IN_ISDIR) {
    if (mask & (IN_CREATE | IN_MOVED_TO)) {
      for (const auto& f : AddTree(path)) on_file_(f);
    } else if (mask & (IN_DELETE | IN_MOVED_FROM)) {
      RemoveTree(path);
      if (on_overflow_) on_overflow_();  // files below it are gone or moved: rescan
    }
    return;
  }
  if (sources::IsSourcePath(path)) on_file_(path);
}

}  // namespace tw::watch
