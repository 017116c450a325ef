#include "support/daemon_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace tw::testing {

using Clock = std::chrono::steady_clock;

bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout,
             std::chrono::milliseconds interval) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

namespace {

std::string KeyOf(const std::string& entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const Options& options) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  // The environment: ours, with the entries in env_set replacing those of the same key.
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto& s : options.env_set) replaced = replaced || KeyOf(s) == KeyOf(entry);
    if (!replaced) env.push_back(entry);
  }
  for (const auto& s : options.env_set)
    if (s.find('=') != std::string::npos) env.push_back(s);
  std::vector<char*> envp, args;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);

  const std::string out = options.stdout_path.empty() ? "/dev/null" : options.stdout_path;
  const std::string err = options.stderr_path.empty() ? "/dev/null" : options.stderr_path;
  const pid_t parent = ::getpid();
  // fork + exec rather than posix_spawn: the child asks to be SIGKILLed when the test process
  // dies (a ctest timeout, a crash), so no daemon outlives its test. Only async-signal-safe
  // calls between fork and exec.
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (options.own_process_group) ::setpgid(0, 0);
    if (::getppid() != parent) ::_exit(127);  // the parent is already gone
    // Default dispositions and an empty mask, whatever the test runner left us with.
    for (int sig = 1; sig < NSIG; ++sig) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int in_fd = ::open("/dev/null", O_RDONLY);
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in_fd < 0 || out_fd < 0 || err_fd < 0) ::_exit(127);
    ::dup2(in_fd, 0);
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    for (int fd : {in_fd, out_fd, err_fd})
      if (fd > 2) ::close(fd);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  pid_ = pid;
  own_process_group_ = options.own_process_group;
  // Set from both sides, so the group exists before either goes on (a kill of the group right
  // after the fork must not miss it).
  if (own_process_group_) ::setpgid(pid, pid);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) KillAndReap();
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(o.pid_), own_process_group_(o.own_process_group_), status_(o.status_) {
  o.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    if (pid_ > 0) KillAndReap();
    pid_ = o.pid_;
    own_process_group_ = o.own_process_group_;
    status_ = o.status_;
    o.pid_ = -1;
  }
  return *this;
}

void ChildProcess::Signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      pid_ = -1;
      return status_;
    }
    if (r < 0 && errno != EINTR) {  // not our child any more: nothing to wait for
      pid_ = -1;
      return std::nullopt;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int ChildProcess::KillAndReap() {
  if (status_) return *status_;
  if (pid_ <= 0) return -1;
  ::kill(own_process_group_ ? -pid_ : pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  status_ = status;
  return status;
}

DaemonProcess::DaemonProcess(const std::vector<std::string>& args, std::string log_path,
                             const std::vector<std::string>& env)
    : log_path_(std::move(log_path)) {
  std::vector<std::string> argv = {TW_CLI_BINARY, "daemon"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess::Options o;
  o.stderr_path = log_path_;
  // Unset (no '='): the notify protocol is off unless the test sets these.
  o.env_set = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"};
  for (const auto& e : env) o.env_set.push_back(e);
  // Later entries of the same key win: drop the defaults the caller overrides.
  std::vector<std::string> merged;
  for (size_t i = 0; i < o.env_set.size(); ++i) {
    bool overridden = false;
    for (size_t j = i + 1; j < o.env_set.size(); ++j)
      overridden = overridden || KeyOf(o.env_set[j]) == KeyOf(o.env_set[i]);
    if (!overridden) merged.push_back(o.env_set[i]);
  }
  o.env_set = std::move(merged);
  child_ = ChildProcess(argv, o);
}

std::string DaemonProcess::Log() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool DaemonProcess::WaitForLog(const std::string& text, std::chrono::milliseconds timeout) const {
  return WaitFor([&] { return Log().find(text) != std::string::npos; }, timeout,
                 std::chrono::milliseconds(20));
}

NotifySocket::NotifySocket(std::string path) : path_(std::move(path)) {
  sockaddr_un addr{};
  if (path_.size() >= sizeof(addr.sun_path))
    throw std::runtime_error("notify socket path too long: " + path_);
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.data(), path_.size());
  ::unlink(path_.c_str());
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int e = errno;
    ::close(fd_);
    throw std::runtime_error("bind " + path_ + ": " + std::strerror(e));
  }
}

NotifySocket::~NotifySocket() {
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());
}

std::optional<std::string> NotifySocket::Receive(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::nullopt;
    }
    return std::string(buf, static_cast<size_t>(n));
  }
}

std::optional<std::string> NotifySocket::WaitForLine(const std::string& line,
                                                     std::chrono::milliseconds timeout,
                                                     std::vector<std::string>* seen) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return std::nullopt;
    std::optional<std::string> d = Receive(left);
    if (!d) return std::nullopt;
    if (seen) seen->push_back(*d);
    if (HasLine(*d, line)) return d;
  }
}

bool HasLine(const std::string& datagram, const std::string& line) {
  std::istringstream in(datagram);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

}  // namespace tw::testing
