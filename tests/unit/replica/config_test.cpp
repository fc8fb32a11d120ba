#include "replica/config.hpp"

#include "replica/backends/model.hpp"
#include "tests/unit/common/help_text.hpp"

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

TEST_CASE("replica --help: sections, 100 columns, and the choices it lists pass validation",
          "[config]") {
    replica_config cfg;
    const std::string usage = make_flags(cfg).usage();
    INFO(usage);
    for (const auto& line : lanes::test::lines_of(usage)) {
        INFO(line);
        CHECK(line.size() <= 100);
    }
    for (const char* s : {"Listening", "Model and backend", "KV cache", "Scheduler", "KV events",
                          "Observability", "General"})
        CHECK(usage.find("\n" + std::string(s) + ":\n") != std::string::npos);
    CHECK(usage.find("Other options") == std::string::npos);
    const std::string flat = lanes::test::unwrapped(usage);
    CHECK(flat.find("(one of: auto, cuda, cpu, sim; default: auto)") != std::string::npos);
    CHECK(flat.find("(one of: tiny, small, base, 1b; default: tiny)") != std::string::npos);
    for (const char* backend : {"auto", "cuda", "cpu", "sim"})
        for (const char* preset_name : {"tiny", "small", "base", "1b"}) {
            replica_config c;
            c.backend = backend;
            c.preset = preset_name;
            CHECK(validate(c).empty());
            CHECK(preset(preset_name).has_value());
        }
    replica_config wrong;
    wrong.backend = "gpu";
    const auto errors = validate(wrong);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0] == "--backend must be auto, cuda, cpu or sim (got 'gpu')");
}
