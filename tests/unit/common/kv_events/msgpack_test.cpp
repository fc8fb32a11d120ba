// The msgpack subset: every width of every kind written and read back, and hostile input refused
// without reading past the end or allocating for counts the bytes cannot hold.
#include "common/kv_events/msgpack.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace lanes::common;
namespace mp = lanes::common::msgpack;

namespace {

std::string hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (const unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::string unhex(std::string_view h) {
    std::string out;
    for (std::size_t i = 0; i + 1 < h.size(); i += 2)
        out += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
    return out;
}

} // namespace

TEST_CASE("msgpack: integers, strings and containers at every width round-trip", "[msgpack]") {
    const std::vector<std::uint64_t> uints = {0,     1,     127,        128,         255,  256,
                                              65535, 65536, 0xffffffff, 0x100000000, ~0ull};
    const std::vector<std::int64_t> sints = {
        -1,       -32,       -33,
        -128,     -129,      -32768,
        -32769,   INT32_MIN, static_cast<std::int64_t>(INT32_MIN) - 1,
        INT64_MIN};
    const std::vector<std::size_t> lengths = {0, 31, 32, 255, 256, 65535, 65536};
    std::string bytes;
    mp::writer w(bytes);
    w.array(uints.size() + sints.size() + 2 * lengths.size() + 5);
    for (const auto u : uints)
        w.uint(u);
    for (const auto s : sints)
        w.sint(s);
    for (const auto n : lengths) {
        w.str(std::string(n, 's'));
        w.bin(std::string(n, '\x01'));
    }
    w.nil();
    w.boolean(true);
    w.float64(-2.5);
    w.map(16); // map16
    for (int i = 0; i < 16; ++i) {
        w.str("k" + std::to_string(i));
        w.uint(static_cast<std::uint64_t>(i));
    }
    w.array(0);

    mp::document doc;
    std::string error;
    REQUIRE(doc.parse(bytes, {}, error));
    const auto& root = doc.root();
    REQUIRE(root.k == mp::kind::array);
    std::size_t at = 0;
    for (const auto u : uints) {
        const auto& v = doc.item(root, at++);
        CHECK(v.k == mp::kind::uint);
        CHECK(v.u == u);
    }
    for (const auto s : sints) {
        const auto& v = doc.item(root, at++);
        CHECK(v.k == mp::kind::sint);
        CHECK(v.i == s);
    }
    for (const auto n : lengths) {
        const auto& s = doc.item(root, at++);
        const auto& b = doc.item(root, at++);
        CHECK(s.k == mp::kind::str);
        CHECK(s.s.size() == n);
        CHECK(b.k == mp::kind::bin);
        CHECK(b.s == std::string(n, '\x01'));
    }
    CHECK(doc.item(root, at++).k == mp::kind::nil);
    CHECK(doc.item(root, at++).b);
    CHECK(doc.item(root, at++).f == -2.5);
    const auto& m = doc.item(root, at++);
    REQUIRE(m.k == mp::kind::map);
    REQUIRE(doc.find(m, "k15"));
    CHECK(doc.find(m, "k15")->u == 15);
    CHECK(doc.find(m, "nope") == nullptr);
    CHECK(doc.item(root, at++).count == 0);
}

TEST_CASE("msgpack: the bytes other encoders write read the same", "[msgpack]") {
    // {"a": [1, -1, 3.0], "b": nil} as msgspec and msgpack-python write it (float64, fixmap).
    mp::document doc;
    std::string error;
    const std::string input = unhex("82a1619301ffcb4008000000000000a162c0"); // outlives doc's views
    REQUIRE(doc.parse(input, {}, error));
    const auto* a = doc.find(doc.root(), "a");
    REQUIRE(a);
    CHECK(doc.item(*a, 0).u == 1);
    CHECK(doc.item(*a, 1).i == -1);
    CHECK(doc.item(*a, 2).f == 3.0);
    CHECK(doc.find(doc.root(), "b")->k == mp::kind::nil);
    // And what ours writes for the same is byte for byte that.
    std::string bytes;
    mp::writer w(bytes);
    w.map(2);
    w.str("a");
    w.array(3);
    w.uint(1);
    w.sint(-1);
    w.float64(3.0);
    w.str("b");
    w.nil();
    CHECK(hex(bytes) == "82a1619301ffcb4008000000000000a162c0");
}

TEST_CASE("msgpack: hostile input is refused with a reason", "[msgpack]") {
    mp::document doc;
    std::string error;
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"", "truncated"},
        {unhex("dd7fffffff"), "truncated"},       // an array of 2^31 items in 5 bytes
        {unhex("df00010000"), "truncated"},       // a map of 65536 pairs, no bytes for them
        {unhex("db00001000616263"), "truncated"}, // a 4096-byte string of 3 bytes
        {unhex("cf0102"), "truncated"},           // a uint64 cut short
        {unhex("d401aa"), "unsupported"},         // an extension type
        {unhex("c1"), "unsupported"},             // the never-used byte
        {unhex("0101"), "after"},                 // two values
    };
    for (const auto& [bytes, why] : bad) {
        INFO(hex(bytes));
        CHECK_FALSE(doc.parse(bytes, {}, error));
        CHECK(error.find(why) != std::string::npos);
    }
    // Nesting past the limit.
    const std::string deep(40, '\x91');
    CHECK_FALSE(doc.parse(deep + std::string(1, '\x00'), {}, error));
    CHECK(error.find("nested") != std::string::npos);
    // More values than allowed.
    std::string many;
    mp::writer w(many);
    w.array(1000);
    for (int i = 0; i < 1000; ++i)
        w.uint(1);
    mp::limits few;
    few.max_values = 100;
    CHECK_FALSE(doc.parse(many, few, error));
    CHECK(error.find("more than 100") != std::string::npos);
}
