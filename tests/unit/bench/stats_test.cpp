#include "bench/stats.hpp"

#include <catch2/catch.hpp>

using namespace lanes::bench;

TEST_CASE("percentiles interpolate between closest ranks", "[stats]") {
    const std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK(percentile(v, 0.0) == 1);
    CHECK(percentile(v, 1.0) == 10);
    CHECK(percentile(v, 0.5) == Approx(5.5));
    CHECK(percentile(v, 0.9) == Approx(9.1));
    CHECK(percentile(v, 0.99) == Approx(9.91));
    CHECK(percentile({}, 0.5) == 0);
    const auto s = summarize({5, 1, 3});
    CHECK(s.count == 3);
    CHECK(s.mean == Approx(3));
    CHECK(s.p50 == 3);
    CHECK(s.max == 5);
}
