// lanes-router: reads and checks the config, then runs the router (router/app.hpp) until
// SIGINT or SIGTERM.
#include "common/config_util.hpp"
#include "common/log.hpp"
#include "router/app.hpp"
#include "router/config.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
    using namespace lanes;
    router::router_config cfg;
    bool help = false;
    std::string usage;
    std::vector<std::string> errors = router::load_config(argc, argv, cfg, help, usage);
    if (help) {
        std::fputs(usage.c_str(), stdout);
        return 0;
    }
    const auto invalid = router::validate(cfg);
    errors.insert(errors.end(), invalid.begin(), invalid.end());
    if (errors.empty())
        errors = router::read_secrets(cfg); // (its files are read once the flags are right)
    if (!errors.empty())
        return common::report_config_errors("lanes-router", errors);
    common::log::level lvl{};
    common::log::parse_level(cfg.log_level, lvl);
    common::log::set_level(lvl);
    common::log::set_queue_limit(cfg.log_queue_bytes);
    try {
        router::router_app app(std::move(cfg));
        if (const auto key_errors = app.load_keys(); !key_errors.empty())
            return common::report_config_errors("lanes-router", key_errors);
        return app.run();
    } catch (const std::exception& e) {
        common::log::flush();
        // (A listener's message already starts with the program's name.)
        const std::string_view what = e.what();
        std::fprintf(stderr, "%s%s\n",
                     what.starts_with("lanes-router ") ? "" : "lanes-router: ", e.what());
        return 1;
    }
}
