#include "notify/smtp_client.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>

#include "notify/net.h"
#include "notify/render.h"
#include "notify/secrets.h"

namespace tw::notify {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

constexpr size_t kMaxReplyBytes = 64 * 1024;  // one reply line, at most
constexpr size_t kMaxReplyLines = 200;
constexpr size_t kMaxTextBytes = 500;  // of a reply's text kept for messages



// A CR or LF in an address would end the command early and smuggle in another.
bool UsableAddress(const std::string& a) {
  return !a.empty() && std::none_of(a.begin(), a.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= 0x20 || u == 0x7f || c == '<' || c == '>';
  });
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string name(buf);
  const bool ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  });
  return ok ? name : "localhost";
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

struct Reply {
  int code = 0;
  std::vector<std::string> lines;  // without the code and its separator
};

// What EHLO said the server can do (RFC 5321 4.1.1.1); AUTH also in the old "AUTH=" form.
struct Extensions {
  bool starttls = false;
  std::vector<std::string> auth;  // mechanisms, upper case
};

Extensions ParseEhlo(const Reply& r) {
  Extensions e;
  for (size_t i = 1; i < r.lines.size(); ++i) {  // the first line is the server's greeting
    std::string line = AsciiUpper(r.lines[i]);
    if (line == "STARTTLS") e.starttls = true;
    if (line.starts_with("AUTH ") || line.starts_with("AUTH=")) {
      size_t pos = 5;
      while (pos < line.size()) {
        size_t end = line.find(' ', pos);
        if (end == std::string::npos) end = line.size();
        if (end > pos) e.auth.push_back(line.substr(pos, end - pos));
        pos = end + 1;
      }
    }
  }
  return e;
}

// One session: the connection, the deadline that bounds every step, and what came of it.
class Session {
 public:
  Session(asio::io_context& ioc, const SmtpServer& server, const std::string& from,
          const std::vector<std::string>& to, std::string_view message)
      : server_(server),
        from_(from),
        to_(to),
        message_(message),
        label_(SmtpLabel(server)),
        ioc_(ioc),
        socket_(ioc),
        timer_(ioc) {
    // Whatever the server says is passed on; it must not pass on the credentials.
    if (!server.password.empty()) {
      secrets_ = {server.password, Base64(server.password),
                  Base64(std::string(1, '\0') + server.username + '\0' + server.password)};
    }
  }

  Result<SmtpReply> Run() {
    deadline_ = net::DeadlineIn(server_.timeout_seconds);
    if (Status s = Check(); !s.ok()) return s;
    if (server_.security != SmtpSecurity::kNone) {
      // Before any traffic: a bad CA file is a configuration error.
      tls_ctx_.emplace(ssl::context::tls_client);
      if (Status s = net::SetUpClientContext(*tls_ctx_, server_.ca_file); !s.ok())
        return IoError(label_ + ": TLS: " + s.message());
    }
    step_ = "resolve";
    auto endpoints = net::Resolve(server_.host, std::to_string(server_.port), deadline_);
    if (!endpoints.ok()) return Fail(endpoints.status().message());
    if (endpoints->empty()) return Fail(TimedOut());
    endpoints_ = std::move(*endpoints);
    step_ = "connect";
    net::RunUntil(ioc_, timer_, deadline_, Talk(), &done_, &timed_out_, [this] { Abort(); });
    if (!status_.ok()) return status_;
    return reply_;
  }

 private:
  // What can be refused before connecting.
  Status Check() const {
    if (server_.host.empty()) return InvalidArgument(label_ + ": no host");
    if (server_.port == 0) return InvalidArgument(label_ + ": port 0");
    if (!UsableAddress(from_))
      return InvalidArgument(label_ + ": MAIL FROM: the sender address is empty or has a space, "
                             "control character, '<' or '>'");
    if (to_.empty()) return InvalidArgument(label_ + ": RCPT TO: no recipients");
    for (const auto& a : to_)
      if (!UsableAddress(a))
        return InvalidArgument(label_ + ": RCPT TO: a recipient address is empty or has a "
                               "space, control character, '<' or '>'");
    if (!server_.username.empty() && server_.security == SmtpSecurity::kNone &&
        !net::IsLoopbackHost(server_.host))
      return InvalidArgument(label_ + ": AUTH: refusing to send a password in plain text to a "
                             "host that is not this machine (use tls = \"starttls\" or \"tls\")");
    return Status::Ok();
  }

  std::string TimedOut() const {
    return "timed out after " + Seconds(server_.timeout_seconds) + " s";
  }
  Status Fail(const std::string& message) const {
    return IoError(label_ + ": " + step_ + ": " + Scrub(message));
  }
  Status Refuse(const std::string& message) const {
    return InvalidArgument(label_ + ": " + step_ + ": " + message);
  }

  std::string Scrub(std::string text) const {
    text = ScrubSecrets(std::move(text), secrets_);
    for (char& c : text)
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = '?';
    return TruncateUtf8(text, kMaxTextBytes);
  }

  // Records the failure of the current step; a timeout wins over the error it caused.
  void Record(const error_code& ec) {
    if (timed_out_) {
      status_ = Fail(TimedOut());
    } else if (handshaking_) {
      status_ = Fail(net::HandshakeError(ec, tls_->native_handle()));
    } else if (ec == asio::error::eof || ec == ssl::error::stream_truncated) {
      status_ = Fail("the server closed the connection");
    } else if (ec == asio::error::not_found) {
      status_ = Fail("a reply line longer than " + std::to_string(kMaxReplyBytes) + " bytes");
    } else {
      status_ = Fail(ec.message());
    }
  }

  void Abort() {
    error_code ignored;
    socket_.close(ignored);
  }

  // GCC 12 miscompiles some co_await expressions (inside conditions, beside temporaries):
  // here every co_await is a whole statement or the whole right side of an assignment, and
  // what a coroutine keeps across a suspension it owns (parameters by value, members).

  asio::awaitable<bool> Write(std::string data) {
    error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    if (tls_) {
      co_await asio::async_write(*tls_, asio::buffer(data), token);
    } else {
      co_await asio::async_write(socket_, asio::buffer(data), token);
    }
    if (ec || timed_out_) Record(ec);
    co_return !ec && !timed_out_;
  }

  // Reads one line into `line`, without its CR LF.
  asio::awaitable<bool> ReadLine(std::string* line) {
    error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    size_t n = 0;
    if (tls_) {
      n = co_await asio::async_read_until(*tls_, asio::dynamic_buffer(rbuf_, kMaxReplyBytes), '\n', token);
    } else {
      n = co_await asio::async_read_until(socket_, asio::dynamic_buffer(rbuf_, kMaxReplyBytes), '\n', token);
    }
    if (ec || timed_out_) {
      Record(ec);
      co_return false;
    }
    *line = rbuf_.substr(0, n);
    rbuf_.erase(0, n);
    while (!line->empty() && (line->back() == '\n' || line->back() == '\r')) line->pop_back();
    co_return true;
  }

  // Reads one reply into last_, every line of a multiline one ("250-...", then "250 ...").
  asio::awaitable<bool> Read() {
    last_ = Reply{};
    for (;;) {
      std::string line;
      const bool ok = co_await ReadLine(&line);
      if (!ok) co_return false;
      const bool digits = line.size() >= 3 && std::all_of(line.begin(), line.begin() + 3, [](char c) {
                            return c >= '0' && c <= '9';
                          });
      if (!digits || (line.size() > 3 && line[3] != ' ' && line[3] != '-')) {
        status_ = Fail("not an SMTP reply: \"" + line.substr(0, 80) + "\"");
        co_return false;
      }
      const int code = std::stoi(line.substr(0, 3));
      if (last_.code != 0 && code != last_.code) {
        status_ = Fail("a multiline reply changed its code from " + std::to_string(last_.code) + " to " +
                       std::to_string(code));
        co_return false;
      }
      last_.code = code;
      last_.lines.push_back(line.size() > 4 ? line.substr(4) : "");
      if (line.size() == 3 || line[3] == ' ') co_return true;
      if (last_.lines.size() > kMaxReplyLines) {
        status_ = Fail("a reply of more than " + std::to_string(kMaxReplyLines) + " lines");
        co_return false;
      }
    }
  }

  // Whether last_ lets the session go on: its code is `want` (a code, or 2 for any 2xx). A
  // 4xx or 5xx is the verdict, and ends the session; anything else is not SMTP.
  bool Expect(int want) {
    if (want < 10 ? last_.code / 100 == want : last_.code == want) return true;
    if (last_.code >= 400 && last_.code < 600) {
      reply_ = Verdict(last_);
      have_verdict_ = true;
    } else {
      status_ = Fail("unexpected reply " + std::to_string(last_.code) + " " + Verdict(last_).text);
    }
    return false;
  }

  // Sends a command line (never logged: AUTH's carry credentials), reads and checks the reply.
  asio::awaitable<bool> Ask(std::string line, int want) {
    line += "\r\n";
    bool ok = co_await Write(std::move(line));
    if (ok) ok = co_await Read();
    co_return ok && Expect(want);
  }

  SmtpReply Verdict(const Reply& r) const {
    std::string text;
    for (const auto& l : r.lines) text += (text.empty() ? "" : "\n") + l;
    return {r.code, Scrub(text), step_};
  }

  asio::awaitable<bool> Handshake() {
    tls_.emplace(socket_, *tls_ctx_);
    if (Status s = net::SetUpClientStream(*tls_, server_.host); !s.ok()) {
      status_ = Fail(s.message());
      co_return false;
    }
    error_code ec;
    handshaking_ = true;
    co_await tls_->async_handshake(ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || timed_out_) {
      Record(ec);
      co_return false;
    }
    handshaking_ = false;
    encrypted_ = true;
    co_return true;
  }

  asio::awaitable<bool> Ehlo() {
    step_ = "EHLO";
    std::string line = "EHLO " + (server_.helo.empty() ? HostName() : server_.helo);
    const bool ok = co_await Ask(std::move(line), 2);
    if (ok) ext_ = ParseEhlo(last_);
    co_return ok;
  }

  asio::awaitable<bool> StartTls() {
    step_ = "STARTTLS";
    if (!ext_.starttls) {
      status_ = Refuse("the server does not offer STARTTLS");
      co_return false;
    }
    bool ok = co_await Ask("STARTTLS", 220);
    if (!ok) co_return false;
    // Anything already read came before the handshake, from anyone on the path: a client that
    // kept it would take it as the encrypted server's words (CVE-2011-0411 and its kin).
    if (!rbuf_.empty()) {
      status_ = Fail("the server sent more than its reply before the TLS handshake");
      co_return false;
    }
    step_ = "STARTTLS: TLS handshake";
    ok = co_await Handshake();
    if (ok) ok = co_await Ehlo();  // its extensions may differ once encrypted (AUTH often does)
    co_return ok;
  }

  asio::awaitable<bool> Auth() {
    const auto offered = [&](const char* m) {
      return std::find(ext_.auth.begin(), ext_.auth.end(), m) != ext_.auth.end();
    };
    if (offered("PLAIN")) {
      step_ = "AUTH PLAIN";
      std::string token = Base64(std::string(1, '\0') + server_.username + '\0' + server_.password);
      std::string line = "AUTH PLAIN " + token + "\r\n";
      bool ok = co_await Write(std::move(line));
      if (ok) ok = co_await Read();
      // A server that ignores the initial response asks for it with an empty challenge.
      if (ok && last_.code == 334) {
        ok = co_await Write(token + "\r\n");
        if (ok) ok = co_await Read();
      }
      co_return ok && Expect(2);
    }
    if (offered("LOGIN")) {
      step_ = "AUTH LOGIN";
      bool ok = co_await Ask("AUTH LOGIN", 334);
      if (ok) ok = co_await Ask(Base64(server_.username), 334);
      if (ok) ok = co_await Ask(Base64(server_.password), 2);
      co_return ok;
    }
    step_ = "AUTH";
    std::string list;
    for (const auto& m : ext_.auth) list += (list.empty() ? "" : " ") + m;
    status_ = Refuse(list.empty() ? "the server offers no AUTH" + std::string(encrypted_ ? "" : " over plain text")
                                  : "the server offers neither PLAIN nor LOGIN (only " + Scrub(list) + ")");
    co_return false;
  }

  asio::awaitable<void> Talk() {
    error_code ec;
    co_await asio::async_connect(socket_, endpoints_, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || timed_out_) co_return Record(ec);
    bool ok = true;
    if (server_.security == SmtpSecurity::kTls) {
      step_ = "TLS handshake";
      ok = co_await Handshake();
    }
    if (ok) {
      step_ = "greeting";
      ok = co_await Read();
      ok = ok && Expect(220);
    }
    if (ok) ok = co_await Ehlo();
    if (ok && server_.security == SmtpSecurity::kStartTls) ok = co_await StartTls();
    if (ok && !server_.username.empty()) ok = co_await Auth();
    if (ok) {
      step_ = "MAIL FROM";
      ok = co_await Ask("MAIL FROM:<" + from_ + ">", 2);
    }
    for (size_t i = 0; ok && i < to_.size(); ++i) {
      step_ = "RCPT TO <" + to_[i] + ">";
      ok = co_await Ask("RCPT TO:<" + to_[i] + ">", 2);
    }
    if (ok) {
      step_ = "DATA";
      ok = co_await Ask("DATA", 354);
    }
    if (ok) {
      step_ = "end of data";
      ok = co_await Write(DotStuff(message_));
      if (ok) ok = co_await Read();
      if (ok && Expect(2)) {
        reply_ = Verdict(last_);
        have_verdict_ = true;
      }
    }
    if (have_verdict_) co_await Quit();
  }

  // QUIT, for politeness: the verdict is in hand, so nothing here can change the result, and
  // it may take at most a second.
  asio::awaitable<void> Quit() {
    done_ = true;
    timer_.expires_at(std::min(deadline_, std::chrono::steady_clock::now() + std::chrono::seconds(1)));
    timer_.async_wait([this](error_code e) {
      if (!e) Abort();
    });
    error_code ec;
    auto token = asio::redirect_error(asio::use_awaitable, ec);
    const std::string_view quit = "QUIT\r\n";
    if (tls_) {
      co_await asio::async_write(*tls_, asio::buffer(quit), token);
    } else {
      co_await asio::async_write(socket_, asio::buffer(quit), token);
    }
    if (!ec && tls_) {
      co_await asio::async_read_until(*tls_, asio::dynamic_buffer(rbuf_, kMaxReplyBytes), '\n', token);
    } else if (!ec) {
      co_await asio::async_read_until(socket_, asio::dynamic_buffer(rbuf_, kMaxReplyBytes), '\n', token);
    }
    timer_.cancel();
    Abort();
  }

  const SmtpServer& server_;
  const std::string& from_;
  const std::vector<std::string>& to_;
  std::string_view message_;
  const std::string label_;
  std::vector<std::string> secrets_;
  asio::io_context& ioc_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<tcp::endpoint> endpoints_;
  tcp::socket socket_;
  asio::steady_timer timer_;
  std::optional<ssl::context> tls_ctx_;
  std::optional<ssl::stream<tcp::socket&>> tls_;
  std::string rbuf_;
  Extensions ext_;
  Reply last_;  // the latest reply
  std::string step_ = "resolve";
  bool handshaking_ = false;
  bool encrypted_ = false;
  bool timed_out_ = false;
  bool done_ = false;
  Status status_;
  bool have_verdict_ = false;
  SmtpReply reply_;
};

}  // namespace

std::string SmtpLabel(const SmtpServer& s) {
  const std::string host = s.host.find(':') != std::string::npos ? "[" + s.host + "]" : s.host;
  return std::string(s.security == SmtpSecurity::kTls ? "smtps" : "smtp") + "://" + host + ":" +
         std::to_string(s.port);
}

std::string DotStuff(std::string_view m) {
  std::string out;
  out.reserve(m.size() + m.size() / 32 + 8);
  bool line_start = true;
  for (size_t i = 0; i < m.size(); ++i) {
    const char c = m[i];
    if (line_start && c == '.') out += '.';
    line_start = false;
    if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < m.size() && m[i + 1] == '\n') ++i;
      out += "\r\n";
      line_start = true;
    } else {
      out += c;
    }
  }
  if (!line_start) out += "\r\n";
  return out + ".\r\n";
}

Result<SmtpReply> SmtpSend(const SmtpServer& server, const std::string& from,
                           const std::vector<std::string>& to, std::string_view message) {
  // Boost reports some failures (allocation, a broken TLS state) by throwing; none may escape.
  try {
    asio::io_context ioc;
    Session session(ioc, server, from, to, message);
    return session.Run();
  } catch (const std::exception& e) {
    return IoError(SmtpLabel(server) + ": " + e.what());
  }
}

}  // namespace tw::notify
