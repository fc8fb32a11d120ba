#include "replica/backends/backend.hpp"
#include "replica/config.hpp"

#include <catch2/catch.hpp>

using namespace lanes::replica;

TEST_CASE("backend auto picks cuda when usable, else cpu with a reason, and cuda without a device "
          "fails clearly",
          "[backend]") {
    std::string why;
    const bool usable = cuda_available(&why);
    CHECK(!why.empty()); // either the device name or why there is none
    std::string note;
    CHECK(resolve_backend("auto", note) == (usable ? backend_kind::cuda : backend_kind::cpu));
    CHECK(note.find(usable ? "cuda" : "cpu") != std::string::npos);
    CHECK(note.find(why) != std::string::npos);
    CHECK(resolve_backend("sim", note) == backend_kind::sim);
    CHECK(note.empty()); // named outright: nothing to explain

    const auto weights = make_weights(*preset("tiny"), 1);
    backend_options options;
    options.kind = backend_kind::cuda;
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
    options.kind = backend_kind::cpu;
    error.clear();
    auto cpu = make_backend(options, weights, error);
    REQUIRE(cpu);
    CHECK(cpu->name() == "cpu");
}

TEST_CASE("KV blocks: --kv-blocks wins, and cuda sizes from device memory, else from --kv-cache-mb",
          "[backend]") {
    const auto tiny = *preset("tiny");
    replica_config cfg;
    backend_kind kind = backend_kind::cuda;
    cfg.kv_blocks = 77;
    CHECK(resolve_kv_blocks(cfg, tiny, kind) == 77);
    cfg.kv_blocks = 0;
    cfg.max_auto_kv_blocks = 100;
    const std::size_t blocks = resolve_kv_blocks(cfg, tiny, kind);
    CHECK(blocks >= 16);
    CHECK(blocks <= 100);
    if (!cuda_available()) { // the --kv-cache-mb budget, as for cpu
        kind = backend_kind::cpu;
        CHECK(resolve_kv_blocks(cfg, tiny, kind) == blocks);
    }
}

TEST_CASE("backend kinds by name, and the one replica_config builds", "[backend]") {
    for (const auto kind : {backend_kind::cpu, backend_kind::sim, backend_kind::cuda})
        CHECK(parse_backend_kind(to_string(kind)) == kind);
    CHECK_FALSE(parse_backend_kind("auto"));
    CHECK_FALSE(parse_backend_kind("CPU"));
    replica_config cfg;
    cfg.kv_blocks = 32;
    const auto sim = build_backend(cfg, backend_kind::sim);
    CHECK(sim->name() == "sim");
    CHECK(sim->describe() == "sim");
    const auto cpu = build_backend(cfg, backend_kind::cpu);
    CHECK(cpu->name() == "cpu");
    cfg.preset = "no-such-preset";
    CHECK_THROWS_AS(build_backend(cfg, backend_kind::cpu), std::runtime_error);
}
