#include "replica/backends/backend.hpp"
#include "replica/engine/engine.hpp"

#include <catch2/catch.hpp>

using namespace lanes::replica;

TEST_CASE("backend auto picks cuda when usable, else cpu with a reason; cuda without a device "
          "fails clearly",
          "[backend]") {
    std::string why;
    const bool usable = cuda_available(&why);
    CHECK(!why.empty()); // either the device name or why there is none
    std::string note;
    CHECK(resolve_backend("auto", note) == (usable ? "cuda" : "cpu"));
    CHECK(note.find(usable ? "cuda" : "cpu") != std::string::npos);
    CHECK(note.find(why) != std::string::npos);
    CHECK(resolve_backend("sim", note) == "sim");

    const auto weights = make_weights(*preset("tiny"), 1);
    backend_options options;
    options.kind = "cuda";
    options.num_blocks = 16;
    std::string error;
    auto cuda = make_backend(options, weights, error);
    if (usable) {
        REQUIRE(cuda);
        CHECK(cuda->name() == "cuda");
    } else {
        CHECK(cuda == nullptr);
        CHECK(error.starts_with("--backend cuda: "));
        CHECK(error.find(why) != std::string::npos);
    }
    options.kind = "cpu";
    error.clear();
    auto cpu = make_backend(options, weights, error);
    REQUIRE(cpu);
    CHECK(cpu->name() == "cpu");
}
