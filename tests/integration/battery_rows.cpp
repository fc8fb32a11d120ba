#include "battery_rows.hpp"

#include "battery.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sstream>

namespace lanes::test::battery {

namespace {

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

} // namespace

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

} // namespace lanes::test::battery
