#include "replica/config.hpp"

#include <catch2/catch.hpp>

using namespace lanes::replica;

TEST_CASE("cuda options are validated with the rest of the config", "[backend]") {
    replica_config cfg;
    CHECK(validate(cfg).empty());
    cfg.cuda_dtype = "fp16";
    cfg.gpu_memory_utilization = 0.0;
    const auto errors = validate(cfg);
    REQUIRE(errors.size() == 2);
    CHECK(errors[0].find("--gpu-memory-utilization") != std::string::npos);
    CHECK(errors[1].find("--cuda-dtype") != std::string::npos);
}

TEST_CASE("the replica's flags fill its config, and bad values are all reported", "[config]") {
    replica_config cfg;
    auto flags = make_flags(cfg);
    const char* argv[] = {
        "lanes-replica", "--backend",      "sim", "--port", "0", "--kv-blocks", "64", "--preset",
        "small",         "--max-num-seqs", "8"};
    CHECK(flags.parse(static_cast<int>(std::size(argv)), argv).empty());
    CHECK(cfg.backend == "sim");
    CHECK(cfg.port == 0);
    CHECK(cfg.kv_blocks == 64);
    CHECK(cfg.preset == "small");
    CHECK(cfg.max_num_seqs == 8);
    CHECK(validate(cfg).empty());
    cfg.backend = "gpu";
    cfg.preset = "huge";
    const auto errors = validate(cfg);
    REQUIRE(errors.size() == 2);
    CHECK(errors[0].find("--backend") != std::string::npos);
    CHECK(errors[1].find("--preset") != std::string::npos);
}
