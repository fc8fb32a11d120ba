// TLS through the real binaries: client -> router -> replica, both hops over TLS with a
// certificate made here with openssl; keep-alive over TLS; certificate checks; plain HTTP to a
// TLS port refused in words; ALPN and versions; the certificate re-read on SIGHUP.
#include "traffic.hpp"

#include "common/http/fetch.hpp"
#include "common/http/tls.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <openssl/ssl.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <thread>

#include <unistd.h>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;
namespace fs = std::filesystem;
namespace http = common::http;

namespace {

// Runs `command` in a shell; its standard output (and error when asked).
std::string shell(const std::string& command) {
    std::string out;
    if (FILE* p = ::popen(command.c_str(), "r")) {
        char buf[4096];
        std::size_t n = 0;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
            out.append(buf, n);
        ::pclose(p);
    }
    return out;
}

// A self-signed certificate for 127.0.0.1 and localhost (its own CA) in a folder of its own.
struct test_cert {
    explicit test_cert(const std::string& name) {
        dir = fs::temp_directory_path() / ("lanes-tls-" + std::to_string(::getpid()) + "-" + name);
        fs::create_directories(dir);
        make(name);
    }
    ~test_cert() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    // (Re)writes cert.pem and key.pem with a fresh key, subject CN=`cn`.
    void make(const std::string& cn) const {
        const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                                "-nodes -days 2 -subj /CN=" +
                                cn + " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
                                key() + ".new -out " + cert() + ".new >/dev/null 2>&1 && mv " +
                                key() + ".new " + key() + " && mv " + cert() + ".new " + cert() +
                                " >/dev/null";
        REQUIRE(std::system(cmd.c_str()) == 0);
    }
    std::string cert() const { return (dir / "cert.pem").string(); }
    std::string key() const { return (dir / "key.pem").string(); }
    std::vector<std::string> serve_args() const {
        return {"--tls-cert", cert(), "--tls-key", key()};
    }
    fs::path dir;
};

http::fetch_result tls_request(unsigned short port, verb method, const std::string& path,
                               const std::string& body = {}) {
    const auto target = *http::parse_url("https://127.0.0.1:" + std::to_string(port));
    http::fetch_options options;
    options.body = body;
    options.total_timeout = std::chrono::milliseconds(10'000);
    return http::fetch_blocking(target, method, path, options);
}

bool tls_healthy(unsigned short port, std::chrono::milliseconds within) {
    return eventually([&] { return tls_request(port, verb::get, "/health").status == 200; },
                      within);
}

// A replica serving TLS with `cert` (`extra` flags after), healthy, and this process trusting it.
std::unique_ptr<process> tls_replica(const test_cert& cert, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--port", "0"};
    for (const auto& a : cert.serve_args())
        args.push_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    auto replica = std::make_unique<process>(LANES_REPLICA_BIN, args);
    http::set_client_trust({cert.cert(), false});
    REQUIRE(tls_healthy(replica->port(), 10s));
    return replica;
}

// The first bytes a server sends back to `request`, on a plain TCP connection.
std::string plain_exchange(unsigned short port, const std::string& request) {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket s(io);
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    boost::asio::write(s, boost::asio::buffer(request));
    std::string got;
    boost::system::error_code ec;
    char buf[4096];
    for (;;) {
        const std::size_t n = s.read_some(boost::asio::buffer(buf), ec);
        if (ec)
            break;
        got.append(buf, n);
    }
    return got;
}

std::string s_client(unsigned short port, const std::string& options) {
    return shell("echo | timeout 10 openssl s_client -connect 127.0.0.1:" + std::to_string(port) +
                 " " + options + " 2>&1");
}

int count(const std::string& text, const std::string& what) {
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

const std::string completion = R"({"prompt":"Once upon a time","max_tokens":4,"ignore_eos":true})";

} // namespace

TEST_CASE("tls: client to router to replica over TLS with keep-alive and streams", "[tls]") {
    test_cert cert("lanes-test");
    const auto owned = tls_replica(cert, {"--log-level", "debug"});
    process& replica = *owned;
    CHECK(replica.log().find("listening on https://") != std::string::npos);

    std::vector<std::string> router_args = {
        "--host",       "127.0.0.1", "--port",       "0",     "--replica", replica.url(),
        "--replica-ca", cert.cert(), "--access-log", "false", "--threads", "4"};
    for (const auto& a : cert.serve_args())
        router_args.push_back(a);
    process router(LANES_ROUTER_BIN, router_args);
    REQUIRE(router.url().starts_with("https://"));
    REQUIRE(tls_healthy(router.port(), 10s));
    // The admin listener speaks TLS too.
    CHECK(router.log().find("admin listening on https://127.0.0.1:") != std::string::npos);

    // Four clients at once on a router with four I/O threads: pooled TLS connections move
    // between the threads.
    std::atomic<int> ok{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c)
        clients.emplace_back([&] {
            for (int i = 0; i < 10; ++i) {
                const auto r =
                    tls_request(router.port(), verb::post, "/v1/completions", completion);
                const auto j = nlohmann::json::parse(r.body, nullptr, false);
                if (r.status == 200 && j.is_object() && j["usage"]["completion_tokens"] == 4)
                    ++ok;
            }
        });
    for (auto& t : clients)
        t.join();
    CHECK(ok == 40);
    // ignore_eos: sampled at temperature 1, an end of text could cut the stream short.
    const auto streamed =
        tls_request(router.port(), verb::post, "/v1/completions",
                    R"({"prompt":"hi","max_tokens":3,"ignore_eos":true,"stream":true})");
    REQUIRE(streamed.status == 200);
    CHECK(count(streamed.body, "data: {") == 3);
    CHECK(streamed.body.find("data: [DONE]") != std::string::npos);
    // 41 requests (and the monitor's probes, scrapes and model reads) over a few kept-alive TLS
    // connections, not one handshake each.
    const int accepted = count(replica.log(), ": connection from ");
    INFO(accepted << " connections accepted by the replica");
    CHECK(accepted >= 1);
    CHECK(accepted <= 12);
}

TEST_CASE("tls: replicas' certificates are checked unless told not to", "[tls]") {
    test_cert cert("lanes-test");
    test_cert other("someone-else");
    const auto owned = tls_replica(cert);
    process& replica = *owned;

    // Trusting another CA: the replica never passes its probes, and requests are not sent to it.
    process wrong(LANES_ROUTER_BIN,
                  {"--host", "127.0.0.1", "--port", "0", "--replica", replica.url(), "--replica-ca",
                   other.cert(), "--health-interval", "50ms"});
    REQUIRE(wait_healthy(wrong.port(), 10s));
    std::this_thread::sleep_for(300ms);
    const auto refused = post_json(wrong.port(), "/v1/completions", completion);
    CHECK(refused.status >= 500);
    CHECK(eventually(
        [&] { return wrong.log().find("certificate verify failed") != std::string::npos; }, 5s));

    // Discovered by DNS over TLS: each address's certificate is checked for the name looked up.
    process discovered(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0", "--replica-dns",
                                          "https://localhost:" + std::to_string(replica.port()),
                                          "--replica-ca", cert.cert(), "--dns-interval", "100ms"});
    REQUIRE(wait_healthy(discovered.port(), 10s));
    CHECK(eventually(
        [&] { return post_json(discovered.port(), "/v1/completions", completion).status == 200; },
        5s));
    CHECK(discovered.log().find("added https://127.0.0.1:") != std::string::npos);

    // --replica-insecure-skip-verify: no check, and a warning at start.
    process skip(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0", "--replica",
                                    replica.url(), "--replica-insecure-skip-verify"});
    REQUIRE(wait_healthy(skip.port(), 10s));
    CHECK(eventually(
        [&] { return post_json(skip.port(), "/v1/completions", completion).status == 200; }, 5s));
    CHECK(skip.log().find("--replica-insecure-skip-verify") != std::string::npos);
}

TEST_CASE(
    "tls: plain HTTP to a TLS port gets a plain 400 and TLS 1.2 or 1.3 agrees on ALPN http/1.1",
    "[tls]") {
    test_cert cert("lanes-test");
    const auto owned = tls_replica(cert);
    process& replica = *owned;

    const std::string got =
        plain_exchange(replica.port(), "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(got.starts_with("HTTP/1.1 400"));
    CHECK(got.find("https://") != std::string::npos);
    CHECK(got.find("Connection: close") != std::string::npos);
    // Still serving after it.
    CHECK(tls_request(replica.port(), verb::get, "/health").status == 200);

    const std::string both = s_client(replica.port(), "-alpn h2,http/1.1");
    CHECK(both.find("ALPN protocol: http/1.1") != std::string::npos);
    const std::string h2_only = s_client(replica.port(), "-alpn h2");
    CHECK(h2_only.find("No ALPN negotiated") != std::string::npos);
    CHECK(s_client(replica.port(), "-tls1_2").find("TLSv1.2, Cipher is") != std::string::npos);
    CHECK(s_client(replica.port(), "-tls1_3").find("TLSv1.3, Cipher is") != std::string::npos);
}

TEST_CASE("tls: SIGHUP re-reads the certificate and a broken one leaves the old in force",
          "[tls]") {
    test_cert cert("first");
    std::vector<std::string> args = {"--port", "0"};
    for (const auto& a : cert.serve_args())
        args.push_back(a);
    process replica(LANES_REPLICA_BIN, args);
    const auto subject = [&] {
        const std::string out = s_client(replica.port(), "");
        std::smatch m;
        std::regex cn(R"(subject=CN ?= ?(\S+))");
        return std::regex_search(out, m, cn) ? m[1].str() : std::string("(none)");
    };
    REQUIRE(eventually([&] { return subject() == "first"; }, 10s));

    cert.make("second");
    replica.signal(SIGHUP);
    CHECK(eventually([&] { return subject() == "second"; }, 5s));
    CHECK(eventually(
        [&] { return replica.log().find("TLS certificate re-read") != std::string::npos; }, 5s));

    // A key that does not parse: the reload fails in the log, the second certificate stays.
    shell("echo broken > " + cert.key());
    replica.signal(SIGHUP);
    CHECK(eventually(
        [&] { return replica.log().find("TLS certificate not re-read") != std::string::npos; },
        5s));
    CHECK(subject() == "second");
}

TEST_CASE("tls: a client that closes its TLS session mid-answer is noticed, 1.3 and 1.2", "[tls]") {
    // TLS 1.3 sends close_notify as an application-data record: the router must still see the
    // client leave, abort the replica's work and count a 499, for whole and streamed answers.
    test_cert cert("lanes-test");
    auto replica = std::make_unique<process>(
        LANES_REPLICA_BIN,
        std::vector<std::string>{"--port", "0", "--backend", "sim", "--sim-speedup", "0.2"});
    REQUIRE(wait_healthy(replica->port(), 10s));
    std::vector<std::string> router_args = {"--host",    "127.0.0.1",    "--port",       "0",
                                            "--replica", replica->url(), "--access-log", "false"};
    for (const auto& a : cert.serve_args())
        router_args.push_back(a);
    process router(LANES_ROUTER_BIN, router_args);
    http::set_client_trust({cert.cert(), false});
    REQUIRE(tls_healthy(router.port(), 10s));
    const auto running = [&] {
        return common::prom::parse(get(replica->port(), "/metrics").body)
            .sum("vllm:num_requests_running")
            .value_or(-1);
    };
    const auto code_499 = [&] {
        const auto p = common::prom::parse(tls_request(router.port(), verb::get, "/metrics").body);
        const auto* s = p.find("lanes_router_requests_total", {{"code", "499"}});
        return s ? s->value : 0.0;
    };
    double expected_499 = 0;
    for (const int version : {TLS1_3_VERSION, TLS1_2_VERSION}) {
        for (const bool stream : {false, true}) {
            INFO((version == TLS1_3_VERSION ? "TLS 1.3" : "TLS 1.2")
                 << (stream ? ", streamed" : ", whole answer"));
            boost::asio::io_context io;
            boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
            ctx.set_verify_mode(boost::asio::ssl::verify_none);
            SSL_CTX_set_min_proto_version(ctx.native_handle(), version);
            SSL_CTX_set_max_proto_version(ctx.native_handle(), version);
            boost::asio::ssl::stream<boost::asio::ip::tcp::socket> s(io, ctx);
            s.next_layer().connect({boost::asio::ip::make_address("127.0.0.1"), router.port()});
            s.handshake(boost::asio::ssl::stream_base::client);
            const std::string body = std::string(R"({"prompt":"long story","max_tokens":4000,)") +
                                     (stream ? R"("stream":true,)" : "") + R"("ignore_eos":true})";
            const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    "Content-Type: application/json\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n" + body;
            boost::asio::write(s, boost::asio::buffer(req));
            REQUIRE(eventually([&] { return running() == 1.0; }, 10s));
            // close_notify, then the socket closed (as Go, Python and browsers leave).
            s.async_shutdown([](boost::system::error_code) {});
            io.run_for(200ms);
            boost::system::error_code ec;
            s.next_layer().close(ec);
            ++expected_499;
            CHECK(eventually([&] { return running() == 0.0; }, 5s));
            CHECK(eventually([&] { return code_499() == expected_499; }, 5s));
        }
    }
}
