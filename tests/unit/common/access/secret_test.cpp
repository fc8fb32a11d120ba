// Digests, the constant-time compare, Bearer tokens and one-line secret files.
#include "common/access/secret.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

using namespace lanes::common::access;

TEST_CASE("sha256 matches the standard's test vectors, and same compares whole digests",
          "[access]") {
    CHECK(hex(sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(hex(sha256("abc"), 4) == "ba7816bf");
    CHECK(same(sha256("k1"), sha256("k1")));
    CHECK_FALSE(same(sha256("k1"), sha256("k2")));
    digest d = sha256("k1");
    d[31] ^= 1; // the last byte counts too
    CHECK_FALSE(same(d, sha256("k1")));
}

TEST_CASE("bearer_token takes the scheme in any case and trims blanks", "[access]") {
    CHECK(bearer_token("Bearer abc") == "abc");
    CHECK(bearer_token("bearer abc") == "abc");
    CHECK(bearer_token("BEARER  abc  ") == "abc");
    CHECK(bearer_token(" Bearer abc") == "abc");
    CHECK(bearer_token("abc").empty());
    CHECK(bearer_token("Basic YWJj").empty());
    CHECK(bearer_token("Bearer").empty());
    CHECK(bearer_token("Bearer ").empty());
    CHECK(bearer_token("").empty());
}

TEST_CASE("read_secret_file takes the first line, trimmed, and names what is wrong", "[access]") {
    const std::string path = "/tmp/lanes-secret-test-" + std::to_string(::getpid());
    std::string why;
    CHECK_FALSE(read_secret_file(path, why));
    CHECK(why.find("cannot read") != std::string::npos);
    std::ofstream(path) << "  tok3n \r\nsecond line\n";
    CHECK(read_secret_file(path, why) == std::optional<std::string>("tok3n"));
    std::ofstream(path) << "\n";
    CHECK_FALSE(read_secret_file(path, why));
    CHECK(why.find("no secret") != std::string::npos);
    std::remove(path.c_str());
}
