// The router's edge against hostile bytes: a table of raw requests, each sent on a connection of
// its own to a router in front of a recording engine. Every row says the status the client gets,
// whether the router closes the connection, what the engine received (or that it received
// nothing), and for rows about memory the router's peak RSS. Hostile replicas are
// battery_replica_test.cpp; a router short of file descriptors, battery_fd_test.cpp.
#include "battery.hpp"
#include "fake_engine.hpp"
#include "traffic.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;

namespace {

struct outcome {
    int status = 0; // 0: no answer at all
    bool closed = false;
    std::string body;
    beast::http::fields headers;
    bool got_continue = false;
};

// Reads one answer (past a 100 Continue) from `s`; status 0 when none came.
bool read_answer(asio::ip::tcp::socket& s, beast::flat_buffer& buf, outcome& out) {
    for (;;) {
        beast::http::response_parser<beast::http::string_body> parser;
        parser.body_limit(64 << 20);
        beast::error_code ec;
        beast::http::read(s, buf, parser, ec);
        if (ec)
            return false;
        auto res = parser.release();
        if (res.result_int() == 100) {
            out.got_continue = true;
            continue;
        }
        out.status = res.result_int();
        out.body = res.body();
        out.headers = res.base();
        return true;
    }
}

// Sends `bytes` on a fresh connection (in `pieces` when given, with a pause between), reads the
// answer, then learns whether the connection is still usable: a second request on it either gets
// its answer (open) or meets the end of the stream (closed).
outcome send_raw(unsigned short port, const std::vector<std::string>& pieces,
                 std::chrono::milliseconds pause = 0ms) {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), port});
    set_receive_timeout(s, 5s);
    beast::error_code ec;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (i > 0 && pause.count() > 0)
            std::this_thread::sleep_for(pause);
        asio::write(s, asio::buffer(pieces[i]), ec);
        if (ec)
            break;
    }
    outcome out;
    beast::flat_buffer buf;
    if (!read_answer(s, buf, out)) {
        out.closed = true;
        return out;
    }
    asio::write(s, asio::buffer(std::string("GET /health HTTP/1.1\r\nHost: t\r\n\r\n")), ec);
    outcome probe;
    out.closed = ec || !read_answer(s, buf, probe) || probe.status != 200;
    return out;
}

std::string post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "") {
    return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
           extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string chunked(const std::string& path, const std::string& chunks,
                    const std::string& extra_headers = "") {
    return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
           extra_headers + "Transfer-Encoding: chunked\r\n\r\n" + chunks;
}

std::string hex(std::size_t n) {
    std::ostringstream o;
    o << std::hex << n;
    return o.str();
}

// kB of the router's VmHWM (peak resident set) or VmRSS.
long status_kb(int pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0)
            return std::stol(line.substr(field.size() + 1));
    return -1;
}

struct row {
    std::string name;
    std::vector<std::string> pieces;
    int status;
    bool closed;
    // What the engine received: nullopt for nothing at all, else the body it got.
    std::optional<std::string> forwarded;
    std::function<void(const outcome&, const fake_engine::received*)> more = {};
    long max_peak_mb = 0; // a row about memory: the router's peak RSS stays under this
};

row one(std::string name, std::string bytes, int status, bool closed,
        std::optional<std::string> forwarded,
        std::function<void(const outcome&, const fake_engine::received*)> more = {},
        long max_peak_mb = 0) {
    return {std::move(name),      {std::move(bytes)}, status,     closed,
            std::move(forwarded), std::move(more),    max_peak_mb};
}

auto header_absent(std::string name) {
    return [name](const outcome&, const fake_engine::received* got) {
        REQUIRE(got);
        CHECK(got->header(name).empty());
    };
}

auto error_param(std::string param) {
    return [param](const outcome& o, const fake_engine::received*) {
        const auto doc = nlohmann::json::parse(o.body, nullptr, false);
        REQUIRE(doc.is_object());
        CHECK(doc["error"]["param"] == param);
    };
}

auto error_json = [](const outcome& o, const fake_engine::received*) {
    const auto doc = nlohmann::json::parse(o.body, nullptr, false);
    REQUIRE(doc.is_object());
    CHECK(doc["error"].is_object());
    CHECK(doc["error"]["message"].is_string());
};

std::vector<row> rows() {
    std::vector<row> r;
    const std::string cmpl = "/v1/completions";
    // ---- what holds: well-formed requests pass, the body byte for byte -----------------------
    r.push_back(one("GET /health", "GET /health HTTP/1.1\r\nHost: t\r\n\r\n", 200, false, {}));
    r.push_back(one("a completion", post(cmpl, small), 200, false, small));
    r.push_back(one("a chat",
                    post("/v1/chat/completions",
                         R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"),
                    200, false, R"({"model":"m","messages":[{"role":"user","content":"hi"}]})"));
    r.push_back(one("unknown fields and tools pass untouched",
                    post(cmpl, R"({"model":"m","prompt":"x","tools":[{"a":1}],"zzz":{"q":[1,2]}})"),
                    200, false,
                    R"({"model":"m","prompt":"x","tools":[{"a":1}],"zzz":{"q":[1,2]}})"));
    r.push_back(one("Llama-3 token ids", post(cmpl, R"({"model":"m","prompt":[128000,128255,7]})"),
                    200, false, R"({"model":"m","prompt":[128000,128255,7]})"));
    r.push_back(one("HTTP/1.0 without Host",
                    "POST /v1/completions HTTP/1.0\r\nContent-Length: " +
                        std::to_string(small.size()) + "\r\n\r\n" + small,
                    200, true, small));
    r.push_back(one("Connection: close is honoured", post(cmpl, small, "Connection: close\r\n"),
                    200, true, small));
    r.push_back(
        {"two pipelined requests", {post(cmpl, small) + post(cmpl, small)}, 200, false, small});
    r.push_back(one("a header split across writes", post(cmpl, small), 200, false, small));
    r.back().pieces = {"POST /v1/completions HTTP/1.1\r\nHo",
                       "st: t\r\nContent-Length: " + std::to_string(small.size()) + "\r\n\r\n" +
                           small};
    r.push_back(one("100 headers within the limit",
                    post(cmpl, small,
                         [] {
                             std::string h;
                             for (int i = 0; i < 100; ++i)
                                 h += "X-H" + std::to_string(i) + ": v\r\n";
                             return h;
                         }()),
                    200, false, small));
    r.push_back(
        one("Transfer-Encoding in another case",
            "POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: Chunked\r\n\r\n" +
                hex(small.size()) + "\r\n" + small + "\r\n0\r\n\r\n",
            200, false, small));
    r.push_back(one("an unknown path is a 404 in OpenAI form", post("/v2/nothing", small), 404,
                    false, std::nullopt, error_json));
    r.push_back(one("GET on a POST path is a 405",
                    "GET /v1/completions HTTP/1.1\r\nHost: t\r\n\r\n", 405, false, std::nullopt,
                    error_json));
    r.push_back(one("/metrics", "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n", 200, false, {}));
    r.push_back(one("a long session id is taken as no key",
                    post(cmpl, small, "x-session-id: " + std::string(4000, 's') + "\r\n"), 200,
                    false, small));

    // ---- the request head
    // ------------------------------------------------------------------------
    r.push_back(one("obsolete line folding",
                    "POST /v1/completions HTTP/1.1\r\nHost: t\r\nX-A: a\r\n b\r\nContent-Length: " +
                        std::to_string(small.size()) + "\r\n\r\n" + small,
                    400, true, std::nullopt, error_json));
    r.push_back(one("missing Host on 1.1",
                    "POST /v1/completions HTTP/1.1\r\nContent-Length: " +
                        std::to_string(small.size()) + "\r\n\r\n" + small,
                    400, true, std::nullopt));
    r.push_back(one("two Host fields", post(cmpl, small, "Host: u\r\n"), 400, true, std::nullopt));
    r.push_back(one("a header over --header-limit",
                    post(cmpl, small, "X-Big: " + std::string(20000, 'a') + "\r\n"), 431, true,
                    std::nullopt));
    r.push_back(one("a request line of garbage", "GARBAGE\r\n\r\n", 400, true, std::nullopt));
    // Refused at its first byte, not after --header-read-timeout (a TLS client on a plain port).
    r.push_back(one("a TLS ClientHello on a plain HTTP port",
                    std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) +
                        std::string(64, '\x5a'),
                    400, true, std::nullopt));
    r.push_back(one("a method longer than any", std::string(40, 'M') + " / HTTP/1.1\r\n\r\n", 400,
                    true, std::nullopt));
    r.push_back(
        one("HTTP/2 prior knowledge", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, true, std::nullopt));
    r.push_back(one("an unknown HTTP version", "GET /health HTTP/1.7\r\nHost: t\r\n\r\n", 400, true,
                    std::nullopt));
    r.push_back(one("NUL in a field value", post(cmpl, small, std::string("X-N: a\0b\r\n", 10)),
                    400, true, std::nullopt));
    r.push_back(
        one("a bare CR in a field", post(cmpl, small, "X-C: a\rb\r\n"), 400, true, std::nullopt));
    r.push_back(
        one("a space before the colon", post(cmpl, small, "X-S : v\r\n"), 400, true, std::nullopt));
    r.push_back(one("a field name with a bad byte", post(cmpl, small, "X(S): v\r\n"), 400, true,
                    std::nullopt));
    r.push_back(one("a target without its slash",
                    "POST v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}", 400,
                    true, std::nullopt));
    r.push_back(one("a line feed alone ends no request line", "GET /health HTTP/1.1\nHost: t\n\n",
                    400, true, std::nullopt));

    // ---- framing
    // -----------------------------------------------------------------------------------
    const std::string body_chunks = hex(small.size()) + "\r\n" + small + "\r\n0\r\n\r\n";
    r.push_back(one("a chunked body: the engine gets it whole", chunked(cmpl, body_chunks), 200,
                    false, small));
    r.push_back(one("chunks of one byte",
                    chunked(cmpl,
                            [] {
                                std::string c;
                                for (const char ch : small)
                                    c += std::string("1\r\n") + ch + "\r\n";
                                return c + "0\r\n\r\n";
                            }()),
                    200, false, small));
    r.push_back(one("small chunk extensions",
                    chunked(cmpl, hex(small.size()) + ";a=b;c=\"d\"\r\n" + small + "\r\n0\r\n\r\n"),
                    200, false, small));
    r.push_back(one("chunk extensions past --chunk-extension-limit",
                    chunked(cmpl, hex(small.size()) + ";" + std::string(5000, 'e') + "\r\n" +
                                      small + "\r\n0\r\n\r\n"),
                    400, true, std::nullopt));
    r.push_back(one("a chunk-size line of 100,000 zeros",
                    chunked(cmpl, std::string(100000, '0') + hex(small.size()) + "\r\n" + small +
                                      "\r\n0\r\n\r\n"),
                    400, true, std::nullopt));
    r.push_back(one("a chunk size that overflows",
                    chunked(cmpl, "fffffffffffffffffffff\r\n" + small + "\r\n0\r\n\r\n"), 400, true,
                    std::nullopt));
    r.push_back(one("a chunk size that is not hex",
                    chunked(cmpl, "zz\r\n" + small + "\r\n0\r\n\r\n"), 400, true, std::nullopt));
    r.push_back(one("a chunk without its CRLF",
                    chunked(cmpl, hex(small.size()) + "\r\n" + small + "XX0\r\n\r\n"), 400, true,
                    std::nullopt));
    r.push_back(
        one("trailers are never merged into the fields",
            chunked(cmpl, hex(small.size()) + "\r\n" + small +
                              "\r\n0\r\nAuthorization: Bearer stolen\r\nx-session-id: s\r\n\r\n"),
            200, false, small, [](const outcome&, const fake_engine::received* got) {
                REQUIRE(got);
                CHECK(got->header("authorization").empty());
                CHECK(got->header("x-session-id").empty());
            }));
    r.push_back(one("a trailer section past --framing-buffer-limit",
                    chunked(cmpl, hex(small.size()) + "\r\n" + small +
                                      "\r\n0\r\nX-T: " + std::string(70000, 't') + "\r\n\r\n"),
                    400, true, std::nullopt));
    r.push_back(
        one("Transfer-Encoding not ending in chunked",
            "POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n" + small,
            400, true, std::nullopt));
    r.push_back(
        one("chunked, then gzip",
            "POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, gzip\r\n\r\n" +
                body_chunks,
            400, true, std::nullopt));
    r.push_back(one("Transfer-Encoding with Content-Length (smuggling)",
                    "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n" +
                        body_chunks,
                    400, true, std::nullopt));
    r.push_back(
        one("Transfer-Encoding on HTTP/1.0",
            "POST /v1/completions HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + body_chunks,
            400, true, std::nullopt));
    r.push_back(one("a Content-Length that is not a number",
                    "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n{}",
                    400, true, std::nullopt));
    r.push_back(one("a signed Content-Length",
                    "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: +2\r\n\r\n{}", 400,
                    true, std::nullopt));
    r.push_back(one("two Content-Lengths that disagree",
                    "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                    "Content-Length: 3\r\n\r\n{}",
                    400, true, std::nullopt));
    r.push_back(one("a Content-Length past --body-limit",
                    "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 9000000\r\n\r\n{",
                    413, true, std::nullopt, error_json));
    r.push_back(one("a chunked body past --body-limit (wire bytes)",
                    chunked(cmpl,
                            [] {
                                std::string c;
                                const std::string piece(1 << 20, ' ');
                                for (int i = 0; i < 9; ++i)
                                    c += hex(piece.size()) + "\r\n" + piece + "\r\n";
                                return c + "0\r\n\r\n";
                            }()),
                    413, true, std::nullopt));
    r.push_back(one("100 Continue for HTTP/1.1", post(cmpl, small, "Expect: 100-continue\r\n"), 200,
                    false, small,
                    [](const outcome& o, const fake_engine::received*) { CHECK(o.got_continue); }));
    r.push_back(one("no 100 Continue for HTTP/1.0",
                    "POST /v1/completions HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: " +
                        std::to_string(small.size()) + "\r\n\r\n" + small,
                    200, true, small, [](const outcome& o, const fake_engine::received*) {
                        CHECK_FALSE(o.got_continue);
                    }));
    r.push_back(one("fields named in Connection are not forwarded",
                    post(cmpl, small, "Connection: keep-alive, X-Secret\r\nX-Secret: s\r\n"), 200,
                    false, small, header_absent("x-secret")));
    r.push_back(one("Proxy-Connection is not forwarded",
                    post(cmpl, small, "Proxy-Connection: keep-alive\r\n"), 200, false, small,
                    header_absent("proxy-connection")));
    r.push_back(one("hop-by-hop fields are not forwarded",
                    post(cmpl, small, "Keep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: h2c\r\n"),
                    200, false, small, [](const outcome&, const fake_engine::received* got) {
                        REQUIRE(got);
                        CHECK(got->header("keep-alive").empty());
                        CHECK(got->header("te").empty());
                        CHECK(got->header("upgrade").empty());
                    }));

    // ---- bodies
    // --------------------------------------------------------------------------------------
    r.push_back(
        one("a body that is not JSON", post(cmpl, "{nope"), 400, false, std::nullopt, error_json));
    r.push_back(one("a body that is not an object", post(cmpl, "[1,2]"), 400, false, std::nullopt,
                    error_json));
    r.push_back(one("a duplicate model", post(cmpl, R"({"model":"m","prompt":"x","model":"n"})"),
                    400, false, std::nullopt, error_param("model")));
    r.push_back(one("an escaped prompt name", post(cmpl, R"({"model":"m","pr\u006fmpt":"x"})"), 400,
                    false, std::nullopt, error_param("prompt")));
    r.push_back(one("a duplicate stream",
                    post(cmpl, R"({"prompt":"x","stream":false,"stream":true})"), 400, false,
                    std::nullopt, error_param("stream")));
    r.push_back(one("a duplicate user", post(cmpl, R"({"prompt":"x","user":"a","user":"b"})"), 400,
                    false, std::nullopt, error_param("user")));
    r.push_back(one("a message's role twice",
                    post("/v1/chat/completions",
                         R"({"messages":[{"role":"user","role":"system","content":"x"}]})"),
                    400, false, std::nullopt, error_param("messages[0].role")));
    r.push_back(
        one("a message's escaped content",
            post("/v1/chat/completions", R"({"messages":[{"role":"user","c\u006fntent":"x"}]})"),
            400, false, std::nullopt, error_param("messages[0].content")));
    r.push_back(one("fields not read may repeat",
                    post(cmpl, R"({"prompt":"x","temperature":1,"temperature":0})"), 200, false,
                    R"({"prompt":"x","temperature":1,"temperature":0})"));
    const std::string nest64 =
        R"({"model":"m","prompt":"x","extra":)" + std::string(63, '[') + std::string(63, ']') + "}";
    r.push_back(one("nesting of 64 passes", post(cmpl, nest64), 200, false, nest64));
    const std::string nest65 =
        R"({"model":"m","prompt":"x","extra":)" + std::string(64, '[') + std::string(64, ']') + "}";
    r.push_back(
        one("nesting of 65 is refused", post(cmpl, nest65), 400, false, std::nullopt, error_json));
    r.push_back(one("8 MiB of '[' (was 550 MB peak)", post(cmpl, std::string((8 << 20) - 64, '[')),
                    400, false, std::nullopt, error_json, 160));
    const std::string big_prompt =
        R"({"model":"m","prompt":")" + std::string((8 << 20) - 64, 'p') + "\"}";
    r.push_back(one("an 8 MiB prompt is forwarded", post(cmpl, big_prompt), 200, false, big_prompt,
                    {}, 160));
    const std::string many_arrays = [] {
        std::string b = R"({"model":"m","prompt":"x","extra":[)";
        while (b.size() < (8u << 20) - 64)
            b += "[],";
        return b + "[]]}";
    }();
    r.push_back(
        one("8 MiB of empty arrays", post(cmpl, many_arrays), 200, false, many_arrays, {}, 160));
    const std::string many_keys = [] {
        std::string b = R"({"model":"m","prompt":"x")";
        for (int i = 0; b.size() < (8u << 20) - 64; ++i)
            b += ",\"k" + std::to_string(i) + "\":0";
        return b + "}";
    }();
    r.push_back(one("8 MiB of keys", post(cmpl, many_keys), 200, false, many_keys, {}, 160));
    r.push_back(one("a string with invalid UTF-8 goes to the engine to judge",
                    post(cmpl, "{\"model\":\"m\",\"prompt\":\"\xff\xfe\"}"), 400, false,
                    std::nullopt, error_json));
    r.push_back(one("an empty body", post(cmpl, ""), 400, false, std::nullopt, error_json));
    return r;
}

} // namespace

TEST_CASE("battery: hostile request bytes get the right status, close, and forward nothing wrong",
          "[router][battery]") {
    fake_engine engine({"m"});
    auto router = std::make_unique<process>(
        LANES_ROUTER_BIN,
        std::vector<std::string>{"--host", "127.0.0.1", "--port", "0", "--replica", engine.url(),
                                 "--health-interval", "50ms", "--access-log", "false",
                                 "--header-read-timeout", "1s"});
    REQUIRE(wait_healthy(router->port(), 10s));
    REQUIRE(eventually([&] { return get(router->port(), "/readiness").status == 200; }, 5s));
    const auto table = rows();
    REQUIRE(table.size() >= 60);
    // BATTERY_ROWS=A-B runs rows A to B only (counted from 0), to find the one that breaks.
    int first_row = 0, last_row = 1 << 30;
    if (const char* only = std::getenv("BATTERY_ROWS"))
        std::sscanf(only, "%d-%d", &first_row, &last_row);
    int index = -1;
    for (const auto& row : table) {
        ++index;
        if (index < first_row || index > last_row)
            continue;
        INFO("row: " << row.name);
        const auto before = engine.requests().size();
        const outcome o = send_raw(router->port(), row.pieces);
        if (o.status == 0 && row.status != 0 &&
            !eventually([&] { return get(router->port(), "/health").status == 200; }, 1s))
            FAIL("the router stopped answering: " << router->log().substr(0, 4000));
        CHECK(o.status == row.status);
        CHECK(o.closed == row.closed);
        const auto got = engine.requests();
        const fake_engine::received* last = got.size() > before ? &got.back() : nullptr;
        if (!row.forwarded) {
            CHECK(got.size() == before);
        } else {
            REQUIRE(last != nullptr);
            CHECK(last->body.size() == row.forwarded->size());
            CHECK(last->body == *row.forwarded);
        }
        if (row.more)
            row.more(o, last);
        // (A sanitizer's shadow memory and quarantine make resident sizes mean nothing there.)
        if (row.max_peak_mb > 0 && !under_sanitizer) {
            const long peak = status_kb(router->pid(), "VmHWM");
            INFO("peak RSS " << peak / 1024 << " MB");
            CHECK(peak > 0);
            CHECK(peak < row.max_peak_mb * 1024);
        }
    }
    // A client that stops in the middle of its header is cut at --header-read-timeout.
    const auto start = std::chrono::steady_clock::now();
    const outcome slow =
        send_raw(router->port(), {std::string("POST /v1/completions HTTP/1.1\r\nHost: t\r\n")});
    CHECK(slow.closed);
    CHECK(std::chrono::steady_clock::now() - start < 4s);
    // The big bodies' buffers went back: the resident set falls well under its peak.
    if (!under_sanitizer) {
        const long peak = status_kb(router->pid(), "VmHWM");
        long rss = 0;
        const bool fell = eventually(
            [&] {
                rss = status_kb(router->pid(), "VmRSS");
                return rss <= peak - 4096; // at least 4 MiB of the 8 MiB bodies given back
            },
            5s);
        INFO("rss " << rss / 1024 << " MB, peak " << peak / 1024 << " MB");
        CHECK(fell);
    }
    // The router is still serving.
    CHECK(post_json(router->port(), "/v1/completions", small).status == 200);
}
