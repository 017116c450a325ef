#include "support/browser.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "support/daemon_process.h"
#include "support/test_env.h"

namespace tw::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using Ms = Browser::Ms;

namespace {

// The flags that work on a closed-network build machine: no sandbox (no user namespaces in
// containers), no GPU, none of the background fetches that would wait on a network, and
// shared memory in /tmp (a container's 64 MB /dev/shm crashes renderers drawing big canvases).
const std::vector<std::string> kFlags = {
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-breakpad", "--no-default-browser-check", "--disable-dev-shm-usage",
    "--remote-debugging-port=0"};

std::string ChromiumPath(const std::string& configured) {
  if (!configured.empty()) return configured;
  const char* env = std::getenv("TW_CHROMIUM");
  return env && *env ? env : "/usr/bin/chromium";
}

long long MsLeft(Clock::time_point deadline) {
  return std::max<long long>(0, std::chrono::duration_cast<Ms>(deadline - Clock::now()).count());
}

// A console argument as the page would print it: a string's text, else its description.
std::string ArgText(const json::value& arg) {
  const json::object& o = arg.as_object();
  if (const auto* v = o.if_contains("value")) return v->is_string() ? std::string(v->as_string()) : json::serialize(*v);
  if (const auto* d = o.if_contains("description")) return std::string(d->as_string());
  if (const auto* u = o.if_contains("unserializableValue")) return std::string(u->as_string());
  return std::string(o.at("type").as_string());
}

// Chromium asks an origin for /favicon.ico by itself, on the first document it shows from it
// (a JSON answer too): not a resource of the page, and not an error of the page when absent.
bool IsBrowsersOwnFavicon(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return path != std::string::npos && url.compare(path, std::string::npos, "/favicon.ico") == 0;
}

std::string Str(const json::object& o, const char* key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

struct Browser::Impl {
  Options options;
  TempDir dir;  // the profile, Chromium's stderr; removed last
  ChildProcess process;
  asio::io_context io;
  websocket::stream<beast::tcp_stream> ws{io};
  beast::flat_buffer buffer;
  bool reading = false;  // an async_read is outstanding
  bool read_done = false;
  beast::error_code read_error;
  int64_t next_id = 1;
  std::string session;  // the page's flattened session
  int64_t loads = 0;    // Page.loadEventFired seen
  std::map<std::string, std::string> request_urls;  // requestId -> url, for failed loads
  std::vector<std::string> errors, dialogs;

  std::string StderrPath() const { return dir / "chromium.log"; }

  // Chromium's stderr without the D-Bus complaints of a machine without a session bus.
  std::string StderrTail() const {
    std::istringstream in(ReadFileOrEmpty(StderrPath()));
    std::string line, out;
    while (std::getline(in, line))
      if (line.find("dbus") == std::string::npos) out += line + "\n";
    return out.size() > 3000 ? "..." + out.substr(out.size() - 3000) : out;
  }
  static std::string ReadFileOrEmpty(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  [[noreturn]] void Fail(const std::string& what) const {
    throw BrowserError(what + "\n  page errors: " + Report() + "\n  chromium's stderr (" + StderrPath() +
                       "):\n" + StderrTail());
  }
  std::string Report() const {
    if (errors.empty() && dialogs.empty()) return "none";
    std::string r;
    for (const auto& e : errors) r += "\n    " + e;
    for (const auto& d : dialogs) r += "\n    dialog " + d;
    return r;
  }

  // Runs the I/O until `*done` or the deadline; false at the deadline.
  bool RunUntil(const bool* done, Clock::time_point deadline) {
    while (!*done) {
      if (io.stopped()) io.restart();
      if (io.run_one_until(deadline) == 0 && Clock::now() >= deadline) return *done;
    }
    return true;
  }

  void Write(const std::string& text, Clock::time_point deadline) {
    bool done = false;
    beast::error_code error;
    ws.async_write(asio::buffer(text), [&](beast::error_code ec, size_t) {
      error = ec;
      done = true;
    });
    // The write must finish before `text` and `done` go: past the deadline the connection is
    // broken anyway, so close the socket and let the write complete with an error.
    if (!RunUntil(&done, deadline)) {
      beast::get_lowest_layer(ws).socket().close();
      RunUntil(&done, Clock::now() + std::chrono::seconds(5));
      Fail("sending to Chromium timed out");
    }
    if (error) Fail("sending to Chromium failed: " + error.message());
  }

  // The next message, or nullopt at the deadline (the read stays outstanding for the next call).
  std::optional<json::object> ReadOne(Clock::time_point deadline) {
    if (!reading) {
      reading = true;
      read_done = false;
      ws.async_read(buffer, [this](beast::error_code ec, size_t) {
        read_error = ec;
        read_done = true;
      });
    }
    if (!RunUntil(&read_done, deadline)) return std::nullopt;
    reading = false;
    if (read_error) Fail("the DevTools connection failed: " + read_error.message());
    json::value v = json::parse(beast::buffers_to_string(buffer.data()));
    buffer.consume(buffer.size());
    return std::move(v.as_object());
  }

  json::object Call(const std::string& method, json::object params, Ms timeout, bool to_page = true) {
    const auto deadline = Clock::now() + timeout;
    const int64_t id = next_id++;
    json::object msg{{"id", id}, {"method", method}, {"params", std::move(params)}};
    if (to_page) msg["sessionId"] = session;
    Write(json::serialize(msg), deadline);
    for (;;) {
      std::optional<json::object> m = ReadOne(deadline);
      if (!m) Fail(method + " got no answer within " + std::to_string(timeout.count()) + " ms");
      if (const auto* got = m->if_contains("id")) {
        if (got->to_number<int64_t>() != id) continue;  // the answer to a call that timed out
        if (const auto* error = m->if_contains("error"))
          Fail(method + " failed: " + json::serialize(*error));
        return m->contains("result") ? std::move(m->at("result").as_object()) : json::object();
      }
      OnEvent(*m);
    }
  }

  // Reads and handles events until the deadline.
  void Pump(Clock::time_point deadline) {
    while (auto m = ReadOne(deadline))
      if (!m->contains("id")) OnEvent(*m);
  }

  void OnEvent(const json::object& m) {
    const std::string method = Str(m, "method");
    static const json::object kNone;
    const auto* p = m.if_contains("params");
    const json::object& params = p && p->is_object() ? p->as_object() : kNone;
    if (method == "Page.loadEventFired") {
      ++loads;
    } else if (method == "Runtime.consoleAPICalled") {
      const std::string type = Str(params, "type");
      if (type != "error" && type != "assert") return;
      std::string text = "console." + type + ":";
      for (const auto& a : params.at("args").as_array()) text += " " + ArgText(a);
      errors.push_back(text);
    } else if (method == "Runtime.exceptionThrown") {
      const json::object& d = params.at("exceptionDetails").as_object();
      std::string text = "uncaught exception: " + Str(d, "text");
      if (const auto* e = d.if_contains("exception"))
        if (const auto* desc = e->as_object().if_contains("description")) text += " " + std::string(desc->as_string());
      if (d.contains("url")) text += " at " + Str(d, "url") + ":" + json::serialize(d.at("lineNumber"));
      errors.push_back(text);
    } else if (method == "Log.entryAdded") {
      const json::object& e = params.at("entry").as_object();
      if (Str(e, "level") == "error" && !IsBrowsersOwnFavicon(Str(e, "url")))
        errors.push_back("log (" + Str(e, "source") + "): " + Str(e, "text") + " " + Str(e, "url"));
    } else if (method == "Network.requestWillBeSent") {
      request_urls[Str(params, "requestId")] = Str(params.at("request").as_object(), "url");
    } else if (method == "Network.responseReceived") {
      const json::object& r = params.at("response").as_object();
      const int64_t status = r.at("status").to_number<int64_t>();
      if (status >= 400 && !IsBrowsersOwnFavicon(Str(r, "url")))
        errors.push_back("HTTP " + std::to_string(status) + " for " + Str(r, "url") + " (" + Str(params, "type") + ")");
    } else if (method == "Network.loadingFailed") {
      const auto* canceled = params.if_contains("canceled");
      if (canceled && canceled->is_bool() && canceled->as_bool()) return;
      errors.push_back("failed to load " + request_urls[Str(params, "requestId")] + ": " + Str(params, "errorText"));
    } else if (method == "Page.javascriptDialogOpening") {
      dialogs.push_back(Str(params, "type") + ": " + Str(params, "message"));
      // The page is blocked until the dialog goes: dismiss it now, not waiting for the answer
      // (Call drops answers it did not ask for).
      json::object msg{{"id", next_id++},
                       {"method", "Page.handleJavaScriptDialog"},
                       {"params", json::object{{"accept", false}}},
                       {"sessionId", session}};
      Write(json::serialize(msg), Clock::now() + options.call_timeout);
    } else if (method == "Inspector.targetCrashed" || method == "Target.targetCrashed") {
      errors.push_back("the page crashed");
    }
  }

  void Start() {
    const std::string chromium = ChromiumPath(options.chromium);
    if (::access(chromium.c_str(), X_OK) != 0)
      throw BrowserError("no Chromium at " + chromium +
                         ": run tools/install-deps.sh (it installs Debian's chromium and "
                         "fonts-dejavu-core), or point $TW_CHROMIUM at one");
    const std::string profile = dir / "profile";
    std::vector<std::string> argv = {chromium};
    argv.insert(argv.end(), kFlags.begin(), kFlags.end());
    argv.push_back("--user-data-dir=" + profile);
    argv.push_back("about:blank");
    ChildProcess::Options o;
    o.stderr_path = StderrPath();
    o.stdout_path = StderrPath();
    // Its crash database and caches go under our directory too, not the user's home.
    o.env_set = {"HOME=" + dir.path(), "XDG_CONFIG_HOME=" + (dir / "config"), "XDG_CACHE_HOME=" + (dir / "cache")};
    o.own_process_group = true;
    process = ChildProcess(argv, o);

    // Chromium writes the port it bound and the browser's websocket path to this file.
    const auto deadline = Clock::now() + options.start_timeout;
    std::string port, path;
    for (;;) {
      std::istringstream in(ReadFileOrEmpty(profile + "/DevToolsActivePort"));
      if (std::getline(in, port) && std::getline(in, path) && !path.empty()) break;
      if (process.Wait(Ms(0))) Fail("Chromium (" + chromium + ") exited before it listened");
      if (Clock::now() >= deadline)
        Fail("Chromium did not write DevToolsActivePort within " + std::to_string(options.start_timeout.count()) + " ms");
      std::this_thread::sleep_for(Ms(20));
    }

    bool done = false;
    beast::error_code error;
    beast::get_lowest_layer(ws).async_connect(
        asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(std::stoi(port))),
        [&](beast::error_code ec) {
          error = ec;
          done = true;
        });
    if (!RunUntil(&done, deadline) || error) Fail("connecting to DevTools on port " + port + ": " + error.message());
    done = false;
    ws.async_handshake("127.0.0.1:" + port, path, [&](beast::error_code ec) {
      error = ec;
      done = true;
    });
    if (!RunUntil(&done, deadline) || error) Fail("the DevTools websocket handshake: " + error.message());
    ws.read_message_max(512u << 20);  // a full-page screenshot is a few MB of base64

    const Ms left(MsLeft(deadline));
    const json::object target = Call("Target.createTarget", {{"url", "about:blank"}}, left, false);
    const json::object attached =
        Call("Target.attachToTarget", {{"targetId", target.at("targetId")}, {"flatten", true}}, left, false);
    session = Str(attached, "sessionId");
    for (const char* domain : {"Page.enable", "Runtime.enable", "Log.enable", "Network.enable"})
      Call(domain, {}, left);
    SetViewport(options.width, options.height);
  }

  void SetViewport(int width, int height) {
    Call("Emulation.setDeviceMetricsOverride",
         {{"width", width}, {"height", height}, {"deviceScaleFactor", 1}, {"mobile", false}}, options.call_timeout);
  }

  void Stop() {
    if (!process.alive()) return;
    const pid_t group = process.pid();
    try {
      if (ws.is_open()) Call("Browser.close", {}, Ms(2000), false);
    } catch (const BrowserError&) {
      // Killed below either way.
    }
    process.Wait(Ms(3000));
    // Whatever is left of its group (renderers, zygotes), also when Chromium itself is gone;
    // then until the group is gone, so none still writes into the profile being removed.
    ::kill(-group, SIGKILL);
    process.KillAndReap();
    const auto deadline = Clock::now() + Ms(3000);
    while (::kill(-group, 0) == 0 && Clock::now() < deadline) std::this_thread::sleep_for(Ms(10));
  }
};

Browser::Browser() : Browser(Options{}) {}

Browser::Browser(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  try {
    impl_->Start();
  } catch (...) {
    impl_->Stop();
    throw;
  }
}

Browser::~Browser() { impl_->Stop(); }

void Browser::Navigate(const std::string& url, Ms timeout) {
  const auto deadline = Clock::now() + timeout;
  const int64_t loads = impl_->loads;
  const json::object r = impl_->Call("Page.navigate", {{"url", url}}, timeout);
  if (const std::string failed = Str(r, "errorText"); !failed.empty()) impl_->Fail("navigating to " + url + ": " + failed);
  while (impl_->loads == loads) {
    std::optional<json::object> m = impl_->ReadOne(deadline);
    if (!m) impl_->Fail(url + " did not finish loading within " + std::to_string(timeout.count()) + " ms");
    if (!m->contains("id")) impl_->OnEvent(*m);
  }
}

json::value Browser::Evaluate(const std::string& js, Ms timeout) {
  const json::object r = impl_->Call(
      "Runtime.evaluate", {{"expression", js}, {"returnByValue", true}, {"awaitPromise", true}}, timeout);
  if (const auto* d = r.if_contains("exceptionDetails")) {
    const json::object& details = d->as_object();
    std::string what = Str(details, "text");
    if (const auto* e = details.if_contains("exception")) what += " " + Str(e->as_object(), "description");
    impl_->Fail("evaluating `" + js + "` threw: " + what);
  }
  const json::object& result = r.at("result").as_object();
  if (const auto* u = result.if_contains("unserializableValue")) return *u;
  if (const auto* v = result.if_contains("value")) return *v;
  return nullptr;
}

void Browser::WaitFor(const std::string& predicate, Ms timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string js = "(() => { try { return Boolean(" + predicate + "); } catch (e) { return false; } })()";
  for (;;) {
    const json::value v = Evaluate(js, Ms(std::max<long long>(MsLeft(deadline), 1000)));
    if (v.is_bool() && v.as_bool()) return;
    if (Clock::now() >= deadline)
      impl_->Fail("waited " + std::to_string(timeout.count()) + " ms for `" + predicate + "`; it never held");
    impl_->Pump(std::min(deadline, Clock::now() + Ms(50)));
  }
}

void Browser::SetViewport(int width, int height) { impl_->SetViewport(width, height); }

void Browser::Screenshot(const std::string& png_path, int width, int height) {
  SetViewport(width, height);
  Evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))");
  const json::object r = impl_->Call("Page.captureScreenshot", {{"format", "png"}}, impl_->options.call_timeout);
  const std::string_view b64 = r.at("data").as_string();
  std::string png(beast::detail::base64::decoded_size(b64.size()), '\0');
  png.resize(beast::detail::base64::decode(png.data(), b64.data(), b64.size()).first);
  WriteFile(png_path, png);
}

const std::vector<std::string>& Browser::errors() const { return impl_->errors; }
const std::vector<std::string>& Browser::dialogs() const { return impl_->dialogs; }
void Browser::ClearErrors() {
  impl_->errors.clear();
  impl_->dialogs.clear();
}
std::string Browser::ErrorReport() const { return impl_->Report(); }
std::string Browser::Stderr() const { return Impl::ReadFileOrEmpty(impl_->StderrPath()); }

}  // namespace tw::testing
