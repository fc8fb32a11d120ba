// Chat-template parity with python3-jinja2: renders every (template, case) of the file that
// render_templates.py writes and compares byte for byte: the output, the raise_exception message,
// or that rendering fails where Jinja2 failed. Prints where the first difference is; exits 1 on
// any mismatch. Then times the render of each template's longest case.
//   lanes_template_parity EXPECTED.json
#include "common/prompt/jinja.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

namespace {

using lanes::common::jinja_template;
using json = nlohmann::ordered_json;

constexpr int bench_renders = 2000;

void show_difference(const std::string& want, const std::string& got) {
    std::size_t at = 0;
    while (at < want.size() && at < got.size() && want[at] == got[at]) {
        ++at;
    }
    const std::size_t from = at > 40 ? at - 40 : 0;
    std::cout << "    first difference at byte " << at << " (want " << want.size() << " bytes, got "
              << got.size() << ")\n"
              << "    want: " << json(want.substr(from, 120)).dump() << "\n"
              << "    got:  " << json(got.substr(from, 120)).dump() << "\n";
}

// One case: true when lanes renders what Jinja2 did.
bool check(const jinja_template& t, const json& entry, std::time_t now) {
    std::string got;
    std::string failure;
    bool raised = false;
    try {
        got = t.render(entry.at("context"), now);
    } catch (const lanes::common::template_raised& e) {
        raised = true;
        failure = e.what();
    } catch (const std::exception& e) {
        failure = e.what();
    }
    if (entry.contains("output")) {
        const std::string want = entry["output"].get<std::string>();
        if (failure.empty() && got == want) {
            return true;
        }
        std::cout << "  MISMATCH " << entry["case"].get<std::string>() << "\n";
        if (!failure.empty()) {
            std::cout << "    lanes failed: " << failure << "\n";
        } else {
            show_difference(want, got);
        }
        return false;
    }
    if (entry.contains("raised")) {
        if (raised && failure == entry["raised"].get<std::string>()) {
            return true;
        }
        std::cout << "  MISMATCH " << entry["case"].get<std::string>() << ": want raised "
                  << entry["raised"].dump() << ", got " << (failure.empty() ? "output" : failure)
                  << "\n";
        return false;
    }
    if (!failure.empty() && !raised) {
        return true;
    }
    std::cout << "  MISMATCH " << entry["case"].get<std::string>() << ": want an error like "
              << entry["error"].dump() << ", got " << (raised ? "raised " + failure : "output")
              << "\n";
    return false;
}

double micros_per_render(const jinja_template& t, const json& context, std::time_t now) {
    std::size_t bytes = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int n = 0; n < bench_renders; ++n) {
        bytes += t.render(context, now).size();
    }
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    return bytes ? took.count() / bench_renders : 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: lanes_template_parity EXPECTED.json\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    const json expected = json::parse(in);
    const auto now = static_cast<std::time_t>(expected.at("now").get<long long>());
    int cases = 0;
    int mismatches = 0;
    for (const auto& tpl : expected.at("templates")) {
        const std::string model = tpl.at("model").get<std::string>();
        std::cout << model << "\n";
        try {
            const auto t = jinja_template::parse(tpl.at("source").get<std::string>());
            const json* longest = nullptr;
            bool all_match = true;
            for (const auto& entry : tpl.at("renders")) {
                ++cases;
                const bool match = check(t, entry, now);
                mismatches += match ? 0 : 1;
                all_match = all_match && match;
                if (entry.contains("output") &&
                    (!longest || entry["output"].get<std::string>().size() >
                                     (*longest)["output"].get<std::string>().size())) {
                    longest = &entry;
                }
            }
            if (longest && all_match) {
                std::printf("  %.1f us per render of '%s' (%zu bytes), %d renders\n",
                            micros_per_render(t, longest->at("context"), now),
                            longest->at("case").get<std::string>().c_str(),
                            longest->at("output").get<std::string>().size(), bench_renders);
            }
        } catch (const std::exception& e) {
            std::cout << "  FAILED: " << e.what() << "\n";
            const auto n = static_cast<int>(tpl.at("renders").size());
            cases += n;
            mismatches += n;
        }
    }
    std::cout << cases << " renders (" << expected.at("templates").size() << " templates), "
              << mismatches << " mismatches\n";
    return mismatches == 0 ? 0 : 1;
}
