#include "replica/backend.hpp"
#include "replica/engine.hpp"

#include <catch2/catch.hpp>

using namespace lanes::replica;

TEST_CASE("backend auto falls back to the CPU with a reason; cuda without a model fails clearly",
          "[backend]") {
    std::string why;
    const bool usable = cuda_available(&why);
    CHECK(!why.empty()); // either the device name or why there is none
    std::string note;
    CHECK(resolve_backend("auto", note) == "cpu"); // no CUDA model backend yet
    CHECK(note.find("cpu") != std::string::npos);
    CHECK(resolve_backend("sim", note) == "sim");

    const auto weights = make_weights(*preset("tiny"), 1);
    backend_options options;
    options.kind = "cuda";
    options.num_blocks = 16;
    std::string error;
    CHECK(make_backend(options, weights, error) == nullptr);
    CHECK(error.starts_with("--backend cuda: "));
    if (!usable)
        CHECK(error.find(why) != std::string::npos);
    options.kind = "cpu";
    error.clear();
    auto cpu = make_backend(options, weights, error);
    REQUIRE(cpu);
    CHECK(cpu->name() == "cpu");
}
