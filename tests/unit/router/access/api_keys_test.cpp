// The key file's grammar, names, limits and problems; lookups by presented token; a reload that
// fails keeps the keys in force.
#include "router/access/api_keys.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include <unistd.h>

using namespace lanes;
using router::key_store;
using router::key_table;

TEST_CASE("key file: keys, names, limits, comments and blank lines", "[access]") {
    key_table t;
    std::vector<std::string> errors;
    t.parse("# the team keys\n"
            "sk-alpha alpha rps=5 burst=10 tpm=60000\n"
            "\n"
            "   sk-beta   beta   # a comment after\r\n"
            "sk-gamma tpm=100\n",
            "keys.txt", errors);
    CHECK(errors.empty());
    REQUIRE(t.size() == 3);
    const auto alpha = t.find("sk-alpha");
    REQUIRE(alpha);
    CHECK(alpha->name == "alpha");
    CHECK(alpha->limits.rps == 5.0);
    CHECK(alpha->limits.burst == 10.0);
    CHECK(alpha->limits.tpm == 60000.0);
    const auto beta = t.find("sk-beta");
    REQUIRE(beta);
    CHECK(beta->name == "beta");
    CHECK_FALSE(beta->limits.rps);
    const auto gamma = t.find("sk-gamma");
    REQUIRE(gamma);
    CHECK(gamma->name == "key-" + common::access::hex(common::access::sha256("sk-gamma"), 4));
    CHECK(gamma->limits.tpm == 100.0);
    CHECK_FALSE(t.find("sk-alph"));
    CHECK_FALSE(t.find("sk-alpha "));
    CHECK_FALSE(t.find(""));
}

TEST_CASE("key file problems name the line, never the key", "[access]") {
    key_table t;
    std::vector<std::string> errors;
    t.parse("sk-secret-1 bad/name\n"
            "sk-secret-2 ok rps=-1\n"
            "sk-secret-3 ok3 speed=3\n"
            "sk-secret-4 dup\n"
            "sk-secret-5 dup\n"
            "sk-secret-4 other\n"
            "sk-secret-6 rps=1 late-name\n",
            "keys.txt", errors);
    REQUIRE(errors.size() == 6);
    CHECK(errors[0].find("keys.txt line 1") != std::string::npos);
    CHECK(errors[1].find("rps must be a number > 0") != std::string::npos);
    CHECK(errors[2].find("unknown setting 'speed'") != std::string::npos);
    CHECK(errors[3].find("line 5: the name 'dup' is taken") != std::string::npos);
    CHECK(errors[4].find("line 6: the same key is listed twice") != std::string::npos);
    CHECK(errors[5].find("line 7") != std::string::npos);
    for (const auto& e : errors)
        CHECK(e.find("sk-secret") == std::string::npos);
    CHECK(t.size() == 1); // only the good line 4
}

TEST_CASE("LANES_API_KEYS entries are separated by commas", "[access]") {
    key_table t;
    std::vector<std::string> errors;
    t.parse("k1 one,k2 two rps=3, k3", "LANES_API_KEYS", errors, true);
    CHECK(errors.empty());
    CHECK(t.size() == 3);
    CHECK(t.find("k2")->limits.rps == 3.0);
    CHECK(t.find("k3"));
}

TEST_CASE("key_store: a file and the environment, a failed reload keeps the old keys", "[access]") {
    const std::string path = "/tmp/lanes-keys-test-" + std::to_string(::getpid());
    std::ofstream(path) << "file-key filed\n";
    key_store store(path, "env-key from-env");
    CHECK(store.configured());
    std::vector<std::string> errors;
    REQUIRE(store.load(errors));
    CHECK(store.table()->size() == 2);
    const auto held = store.table(); // as a request in progress holds it
    std::ofstream(path) << "new-key renamed\n";
    REQUIRE(store.load(errors));
    CHECK(store.table()->find("new-key"));
    CHECK_FALSE(store.table()->find("file-key"));
    CHECK(held->find("file-key")); // what a request took stays valid
    std::ofstream(path) << "new-key bad/name\n";
    CHECK_FALSE(store.load(errors));
    CHECK(store.table()->find("new-key")); // still in force
    std::remove(path.c_str());
    errors.clear();
    CHECK_FALSE(store.load(errors));
    CHECK(errors.front().find("cannot read") != std::string::npos);

    key_store empty_file("/dev/null", "");
    errors.clear();
    CHECK_FALSE(empty_file.load(errors));
    CHECK(errors.front().find("none was found") != std::string::npos);
    CHECK_FALSE(key_store("", "").configured());
}
