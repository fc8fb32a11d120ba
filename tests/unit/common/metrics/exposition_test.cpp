#include "common/metrics/exposition.hpp"
#include "common/metrics/prom_parser.hpp"

#include <catch2/catch.hpp>

#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace m = lanes::common::metrics;
namespace prom = lanes::common::prom;

TEST_CASE("format_value follows Go / prometheus_client", "[metrics]") {
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(m::format_value(1.0) == "1.0");
    CHECK(m::format_value(0.0) == "0.0");
    CHECK(m::format_value(100.0) == "100.0");
    CHECK(m::format_value(52311.0) == "52311.0");
    CHECK(m::format_value(999999.0) == "999999.0");
    CHECK(m::format_value(123456.5) == "123456.5");
    CHECK(m::format_value(0.0234375) == "0.0234375");
    CHECK(m::format_value(0.1) == "0.1");
    CHECK(m::format_value(0.1 + 0.2) == "0.30000000000000004");
    CHECK(m::format_value(0.0001) == "0.0001");
    CHECK(m::format_value(0.00001) == "1e-05");
    CHECK(m::format_value(2.5e-7) == "2.5e-07");
    CHECK(m::format_value(-2.5) == "-2.5");
    CHECK(m::format_value(1750000012.345) == "1.750000012345e+09");
    CHECK(m::format_value(1e6) == "1e+06");
    CHECK(m::format_value(-1e6) == "-1e+06");
    CHECK(m::format_value(1234567.0) == "1.234567e+06");
    CHECK(m::format_value(1e20) == "1e+20");
    CHECK(m::format_value(1.5e300) == "1.5e+300");
    CHECK(m::format_value(inf) == "+Inf");
    CHECK(m::format_value(-inf) == "-Inf");
    CHECK(m::format_value(std::nan("")) == "NaN");
}

TEST_CASE("formatted values parse back to the same double", "[metrics]") {
    for (double v : {0.1 + 0.2, 1750000012.345, 1e-7, 123456789.0, 5e-324, 1.7976931348623157e308,
                     -0.0234375, 52311.0}) {
        const auto r = prom::parse("x " + m::format_value(v) + "\n");
        REQUIRE(r.ok());
        REQUIRE(r.samples.size() == 1);
        CHECK(r.samples[0].value == v);
    }
}

TEST_CASE("label values and help text are escaped", "[metrics]") {
    CHECK(m::escape_label_value("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
    CHECK(m::escape_label_value("plain {x}, y") == "plain {x}, y");
    CHECK(m::escape_help("a\\b\"c\nd") == "a\\\\b\"c\\nd");

    m::registry reg;
    reg.add_gauge("g", "Help with \\ and\nnewline \"quoted\".", {"path"})
        .with({"C:\\dir \"x\"\n"})
        .set(1.0);
    CHECK(reg.expose() == "# HELP g Help with \\\\ and\\nnewline \"quoted\".\n"
                          "# TYPE g gauge\n"
                          "g{path=\"C:\\\\dir \\\"x\\\"\\n\"} 1.0\n");
    const auto r = prom::parse(reg.expose());
    REQUIRE(r.ok());
    CHECK(r.help.at("g") == "Help with \\ and\nnewline \"quoted\".");
    REQUIRE(r.samples.size() == 1);
    CHECK(r.samples[0].label("path") == "C:\\dir \"x\"\n");
}
