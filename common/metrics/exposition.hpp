// The Prometheus text exposition format 0.0.4 as prometheus_client writes it: a family's HELP and
// TYPE lines and its samples (labels sorted by name, a histogram's cumulative buckets, _count and
// _sum), value formatting and escaping.
#pragma once

#include "common/metrics/registry.hpp"

#include <string>
#include <string_view>

namespace lanes::common::metrics {

void write_family(std::string& out, const family<counter>& f);
void write_family(std::string& out, const family<gauge>& f);
void write_family(std::string& out, const family<histogram>& f);

// Go-style float formatting as prometheus_client prints it: `1.0`, `0.0234375`, `52311.0`,
// `1.750000012345e+09`, `1e+06`, `+Inf`, `-Inf`, `NaN`.
std::string format_value(double v);
// Escape a label value (backslash, double quote, newline) and HELP text (backslash, newline).
std::string escape_label_value(std::string_view v);
std::string escape_help(std::string_view v);

} // namespace lanes::common::metrics
