// Parser for the Prometheus text exposition format (0.0.4, and the OpenMetrics text that
// prometheus_client emits: `# EOF`, `_created` series, exemplars after ` # ` are skipped).
// The router uses it to read vLLM's, SGLang's and lanes replicas' /metrics.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lanes::common::prom {

struct sample {
    std::string name;                                        // full sample name, e.g. x_bucket
    std::vector<std::pair<std::string, std::string>> labels; // in the order written
    double value = 0.0;

    // The value of label `key`, or nullopt.
    std::optional<std::string_view> label(std::string_view key) const;
};

struct parse_result {
    std::vector<sample> samples;
    std::map<std::string, std::string> types; // family name -> "counter", "gauge", ...
    std::map<std::string, std::string> help;  // family name -> help text (unescaped)
    std::string error;                        // empty when the whole text parsed
    std::size_t error_line = 0;               // 1-based line of the first error

    bool ok() const { return error.empty(); }
    // Sum of all samples with exactly this name (e.g. across `engine` label values); nullopt
    // when none is present.
    std::optional<double> sum(std::string_view name) const;
    // First sample with this name whose labels include every (key, value) given.
    const sample* find(std::string_view name,
                       const std::vector<std::pair<std::string, std::string>>& match = {}) const;
};

// Parses the whole text. On a malformed line it records the first error (message and line) and
// goes on with the next line, so a single odd line never hides the rest of a scrape.
parse_result parse(std::string_view text);

} // namespace lanes::common::prom
