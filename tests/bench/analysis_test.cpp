// The benchmark's scaling analysis and its complexity alarm, on figures made up here (the
// alarm's real run is scaling_alarm_test.sh).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <vector>

#include "bench/analysis.hpp"
#include "bench/harness.hpp"

namespace packfs::bench {
namespace {

// One figure of the scaling key "k" on "mem" at `scale` (n = 1,000 · scale operations).
Figure figure(uint64_t scale, double median_s, double min_s, std::string key = "k") {
    Figure f;
    f.category = fmt::format("{} @{}N", key, scale);
    f.backend = "mem";
    f.n = 1'000 * scale;
    f.runs = 5;
    f.median_s = median_s;
    f.min_s = min_s;
    f.max_s = median_s * 2;
    f.scale_key = std::move(key);
    f.scale = scale;
    return f;
}

TEST(ScalingSteps, PairEachScaleWithFourTimesIt) {
    const std::vector<Figure> figures{figure(1, 1.0, 1.0), figure(4, 5.0, 4.5),
                                      figure(16, 30.0, 22.5)};
    const auto steps = scaling_steps(figures);
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0].n_small, 1'000u);
    EXPECT_EQ(steps[0].n_large, 4'000u);
    EXPECT_DOUBLE_EQ(steps[0].ratio, 5.0);
    EXPECT_DOUBLE_EQ(steps[0].min_ratio, 4.5);
    EXPECT_EQ(steps[0].verdict, "O(n log n)");
    EXPECT_DOUBLE_EQ(steps[1].ratio, 6.0);
    EXPECT_DOUBLE_EQ(steps[1].min_ratio, 5.0);
}

TEST(ScalingAlarm, QuietForLinearAndLinearithmicSteps) {
    const std::vector<Figure> figures{figure(1, 1.0, 1.0), figure(4, 4.1, 4.0),
                                      figure(16, 20.0, 19.0)};
    EXPECT_TRUE(quadratic_steps(figures).empty());
}

TEST(ScalingAlarm, QuietForACacheStepBelowTheTripwire) {
    // A working set outgrowing the cache: 11x, as the million-entry listing measured.
    const std::vector<Figure> figures{figure(1, 1.0, 1.0), figure(4, 11.0, 10.5)};
    EXPECT_TRUE(quadratic_steps(figures).empty());
}

TEST(ScalingAlarm, FiresOnAQuadraticStep) {
    const std::vector<Figure> figures{figure(1, 1.0, 1.0), figure(4, 16.0, 15.5),
                                      figure(16, 64.0, 62.0)};
    const auto alarms = quadratic_steps(figures);
    ASSERT_EQ(alarms.size(), 1u);  // 4N -> 16N is 4x: not an alarm
    EXPECT_EQ(alarms[0].key, "k");
    EXPECT_EQ(alarms[0].scale_small, 1u);
    EXPECT_EQ(alarms[0].verdict, "O(n^2)");
}

TEST(ScalingAlarm, FiresOnTheMountTableRegression) {
    // The mount table when each mount rescanned every mount path: 2,000 mounts in 13.4 ms,
    // 8,000 in 199 ms (the fastest runs alike).
    const std::vector<Figure> figures{figure(1, 0.0134, 0.0131, "mount backends"),
                                      figure(4, 0.199, 0.190, "mount backends")};
    const auto alarms = quadratic_steps(figures);
    ASSERT_EQ(alarms.size(), 1u);
    EXPECT_EQ(alarms[0].key, "mount backends");
    EXPECT_GT(alarms[0].ratio, kAlarmRatio);
}

TEST(ScalingAlarm, QuietWhenOnlyTheMedianStalled) {
    // A stall in some runs of the larger size: its fastest runs still scale as n log n.
    const std::vector<Figure> figures{figure(1, 1.0, 1.0), figure(4, 20.0, 4.8)};
    EXPECT_TRUE(quadratic_steps(figures).empty());
}

TEST(ClosestClass, NamesTheNearestPrediction) {
    EXPECT_EQ(closest_class(4.0, 1'000), "O(n)");
    EXPECT_EQ(closest_class(4.9, 1'000), "O(n log n)");
    EXPECT_EQ(closest_class(15.0, 1'000), "O(n^2)");
}

}  // namespace
}  // namespace packfs::bench
