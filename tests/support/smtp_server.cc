#include "support/smtp_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "base/json.h"
#include "support/daemon_process.h"
#include "support/test_cert.h"
#include "support/test_env.h"

namespace tw::testing {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

constexpr const char* kPython = "/usr/bin/python3";

// The server. Its configuration comes as JSON in argv[1]; it writes its port to a file once
// it listens, and each accepted message as msg-NNN.eml (raw) and msg-NNN.json (the rest).
constexpr const char* kScript = R"PY(
import asyncio, json, os, ssl, sys
from email import policy
from email.parser import BytesParser
from aiosmtpd.smtp import SMTP, AuthResult

cfg = json.loads(sys.argv[1])
count = 0

def tls_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cfg["cert"], cfg["key"])
    return ctx

def authenticator(server, session, envelope, mechanism, auth_data):
    login = auth_data.login.decode("utf-8", "replace")
    password = auth_data.password.decode("utf-8", "replace")
    ok = login == cfg["username"] and password == cfg["password"]
    return AuthResult(success=ok, handled=False,
                      auth_data={"mechanism": mechanism, "login": login, "password": password})

def write_atomically(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.rename(path + ".tmp", path)

class Handler:
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if cfg["rcpt_reply"]:
            return cfg["rcpt_reply"]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        global count
        if cfg["data_reply"]:
            return cfg["data_reply"]
        raw = envelope.original_content
        tls = server.transport.get_extra_info("ssl_object")
        msg = BytesParser(policy=policy.default).parsebytes(raw)
        parts, defects = [], [repr(d) for d in msg.defects]
        for part in msg.walk():
            if part is not msg:
                defects += [repr(d) for d in part.defects]
            if part.is_multipart():
                continue
            parts.append({"type": part.get_content_type(), "charset": part.get_content_charset() or "",
                          "encoding": str(part.get("Content-Transfer-Encoding", "")),
                          "text": part.get_content()})
        auth = session.auth_data if session.authenticated else {}
        record = {"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos,
                  "tls": tls is not None, "tls_version": tls.version() if tls else "",
                  "auth": auth, "headers": [[k, str(v)] for k, v in msg.items()],
                  "content_type": msg.get_content_type(), "parts": parts, "defects": defects}
        count += 1
        base = os.path.join(cfg["dir"], "msg-%03d" % count)
        write_atomically(base + ".eml", raw)
        write_atomically(base + ".json", json.dumps(record).encode())
        return "250 2.0.0 Accepted as msg-%03d" % count

async def main():
    loop = asyncio.get_running_loop()
    kw = {"hostname": "tw-test.invalid", "loop": loop}
    if cfg["tls"] == "starttls":
        kw.update(tls_context=tls_context(), require_starttls=True)
    if cfg["username"]:
        # aiosmtpd asks for STARTTLS itself; over implicit TLS it would refuse AUTH.
        kw.update(authenticator=authenticator, auth_required=True,
                  auth_require_tls=cfg["tls"] == "starttls" and not cfg["auth_over_plain_text"],
                  auth_exclude_mechanism=cfg["exclude_mechanisms"])
    server = await loop.create_server(lambda: SMTP(Handler(), **kw), "127.0.0.1", 0,
                                      ssl=tls_context() if cfg["tls"] == "implicit" else None)
    write_atomically(cfg["port_file"], str(server.sockets[0].getsockname()[1]).encode())
    async with server:
        await server.serve_forever()

asyncio.run(main())
)PY";

bool CanConnect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string Str(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string ReceivedMessage::Header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (Lower(k) == Lower(name)) return v;
  return "";
}

struct SmtpTestServer::Impl {
  TempDir dir;
  std::optional<TestCertificate> cert;
  ChildProcess child;
  uint16_t port = 0;
  std::string ca_file;
};

bool SmtpTestServer::Available(std::string* why) {
  static const int status = RunCommand(std::string(kPython) + " -c 'import aiosmtpd' </dev/null");
  if (status != 0 && why)
    *why = std::string(kPython) + " cannot import aiosmtpd: install Debian's python3-aiosmtpd "
           "(tools/install-deps.sh does)";
  return status == 0;
}

SmtpTestServer::SmtpTestServer(SmtpServerOptions o) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  fs::create_directories(m.dir / "messages");
  Json cfg;
  const char* tls = o.tls == SmtpServerOptions::Tls::kStartTls  ? "starttls"
                    : o.tls == SmtpServerOptions::Tls::kImplicit ? "implicit"
                                                                 : "none";
  if (o.tls != SmtpServerOptions::Tls::kNone) {
    m.cert.emplace(o.cert_san, "tw-test");
    m.ca_file = m.cert->cert_file();
    cfg.Str("cert", m.cert->cert_file()).Str("key", m.cert->key_file());
  }
  std::string excluded = "[";
  for (size_t i = 0; i < o.exclude_mechanisms.size(); ++i)
    excluded += (i ? "," : "") + JsonQuote(o.exclude_mechanisms[i]);
  excluded += "]";
  cfg.Str("tls", tls).Str("dir", m.dir / "messages").Str("port_file", m.dir / "port")
      .Str("username", o.username).Str("password", o.password).Raw("exclude_mechanisms", excluded)
      .Bool("auth_over_plain_text", o.auth_over_plain_text).Str("rcpt_reply", o.rcpt_reply)
      .Str("data_reply", o.data_reply);
  WriteFile(m.dir / "server.py", kScript);
  ChildProcess::Options po;
  po.stderr_path = m.dir / "server.log";
  po.stdout_path = m.dir / "server.log";
  po.env_set = {"PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH", "PYTHONHOME"};  // the system python, as is
  m.child = ChildProcess({kPython, m.dir / "server.py", cfg.str()}, po);
  // Until it has written its port, or died (a broken script, a missing module).
  WaitFor([&] { return fs::exists(m.dir / "port") || m.child.Wait(std::chrono::milliseconds(0)).has_value(); },
          std::chrono::seconds(20), std::chrono::milliseconds(20));
  if (!fs::exists(m.dir / "port"))
    throw std::runtime_error("the aiosmtpd test server did not start:\n" + log());
  m.port = static_cast<uint16_t>(std::stoi(ReadFile(m.dir / "port")));
  if (!WaitFor([&] { return CanConnect(m.port); }, std::chrono::seconds(10), std::chrono::milliseconds(20)))
    throw std::runtime_error("the aiosmtpd test server does not accept connections:\n" + log());
}

SmtpTestServer::~SmtpTestServer() = default;  // ChildProcess kills and reaps; TempDir removes

uint16_t SmtpTestServer::port() const { return impl_->port; }

const std::string& SmtpTestServer::ca_file() const { return impl_->ca_file; }

std::string SmtpTestServer::log() const {
  std::error_code ec;
  return fs::exists(impl_->dir / "server.log", ec) ? ReadFile(impl_->dir / "server.log") : "";
}

std::vector<ReceivedMessage> SmtpTestServer::messages() const {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(impl_->dir / "messages"))
    if (e.path().extension() == ".json") files.push_back(e.path().native());
  std::sort(files.begin(), files.end());
  std::vector<ReceivedMessage> out;
  for (const auto& f : files) {
    const json::object o = json::parse(ReadFile(f)).as_object();
    ReceivedMessage r;
    r.raw = ReadFile(f.substr(0, f.size() - 5) + ".eml");
    r.mail_from = Str(o, "mail_from");
    for (const auto& t : o.at("rcpt_tos").as_array()) r.rcpt_tos.emplace_back(t.as_string());
    r.tls = o.at("tls").as_bool();
    r.tls_version = Str(o, "tls_version");
    if (const json::value* a = o.if_contains("auth"); a && a->is_object()) {
      r.auth_mechanism = Str(a->as_object(), "mechanism");
      r.auth_login = Str(a->as_object(), "login");
      r.auth_password = Str(a->as_object(), "password");
    }
    for (const auto& h : o.at("headers").as_array())
      r.headers.emplace_back(std::string(h.as_array().at(0).as_string()), std::string(h.as_array().at(1).as_string()));
    r.content_type = Str(o, "content_type");
    for (const auto& p : o.at("parts").as_array()) {
      const json::object& po = p.as_object();
      r.parts.push_back({Str(po, "type"), Str(po, "charset"), Str(po, "encoding"), Str(po, "text")});
    }
    for (const auto& d : o.at("defects").as_array()) r.defects.emplace_back(d.as_string());
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tw::testing
