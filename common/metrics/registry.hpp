// Prometheus text exposition format 0.0.4: a small registry of counters, gauges and histograms
// with labels. Values are updated lock-free; label children are created under a family mutex and
// live as long as the registry (or until retain/retire drops them), so references returned by
// `with()` stay valid.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lanes::common::metrics {

// Label values in the order of the family's label names.
using label_values = std::vector<std::string>;

class counter {
public:
    void inc(double v = 1.0); // v < 0 is ignored: counters never go down
    double value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

class gauge {
public:
    void set(double v) { value_.store(v, std::memory_order_relaxed); }
    void inc(double v = 1.0);
    void dec(double v = 1.0) { inc(-v); }
    double value() const { return value_.load(std::memory_order_relaxed); }

private:
    std::atomic<double> value_{0.0};
};

class histogram {
public:
    explicit histogram(std::vector<double> upper_bounds); // sorted ascending, no +Inf
    void observe(double v);
    // Non-cumulative count per bound; the last element is the +Inf overflow bucket.
    std::vector<std::uint64_t> bucket_counts() const;
    std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }
    double sum() const { return sum_.load(std::memory_order_relaxed); }
    const std::vector<double>& upper_bounds() const { return bounds_; }

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_; // bounds_.size() + 1
    std::atomic<std::uint64_t> count_{0};
    std::atomic<double> sum_{0.0};
};

enum class metric_type { counter, gauge, histogram };

// One named metric with a fixed list of label names; children per label-value tuple.
template <class T>
class family {
public:
    family(std::string name, std::string help, std::vector<std::string> label_names,
           std::vector<double> buckets = {});
    // Child for these label values (created on first use). Throws std::invalid_argument when the
    // number of values differs from the number of label names.
    T& with(const label_values& values);
    // The same without building a vector of strings: on the request path the child usually
    // exists, and the lookup compares the views with the stored values.
    T& with(std::initializer_list<std::string_view> values);
    // Drops the children `keep` says no to (a gauge of something gone, which would otherwise be
    // exposed with its last value for ever). References to them dangle afterwards: only for
    // families whose children nobody holds on to.
    void retain(const std::function<bool(const label_values&)>& keep);
    // The same for children updated on the request path (a counter of a replica that left):
    // they leave the exposition at once, and their storage goes two calls later, so a thread
    // between with() and its update never touches freed memory. generation() moves on with each
    // call that dropped any, for callers that cache a child.
    void retire(const std::function<bool(const label_values&)>& keep);
    std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
    const std::string& name() const { return name_; }
    const std::string& help() const { return help_; }
    const std::vector<std::string>& label_names() const { return label_names_; }
    // Visit children in label-value order.
    template <class F>
    void for_each(F&& f) const {
        std::lock_guard lock(mutex_);
        for (const auto& [values, child] : children_)
            f(values, *child);
    }

private:
    std::string name_;
    std::string help_;
    std::vector<std::string> label_names_;
    std::vector<double> buckets_;
    mutable std::mutex mutex_;
    template <class Values>
    T& with_values(const Values& values);
    T& add_child(label_values values, std::uint64_t hash);
    std::map<label_values, std::unique_ptr<T>> children_; // exposition order
    // Lookups by a hash of the values (a handful of string compares on a hit) rather than through
    // the ordered map, which compares whole strings at every level: one lookup per request.
    std::unordered_multimap<std::uint64_t, std::pair<const label_values*, T*>> index_;
    // Removes the children `keep` rejects (their storage moved to `parked` when given).
    bool drop_children(const std::function<bool(const label_values&)>& keep,
                       std::vector<std::unique_ptr<T>>* parked);
    std::vector<std::unique_ptr<T>> retiring_, retired_; // dropped by the last two retire()s
    std::atomic<std::uint64_t> generation_{0};
};

// Owns families and writes them in registration order. Names are validated at registration
// (metric name charset, counters must end in `_total`, no duplicate names); invalid names throw
// std::invalid_argument, since they are programming errors, not input.
class registry {
public:
    family<counter>& add_counter(std::string name, std::string help,
                                 std::vector<std::string> label_names = {});
    family<gauge>& add_gauge(std::string name, std::string help,
                             std::vector<std::string> label_names = {});
    family<histogram>& add_histogram(std::string name, std::string help,
                                     std::vector<double> buckets,
                                     std::vector<std::string> label_names = {});

    // The whole registry in text format 0.0.4. Labels of a sample are printed sorted by label
    // name (as prometheus_client does); a histogram's `le` goes in that sort order too.
    std::string expose() const;

    static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

private:
    struct entry {
        metric_type type;
        void* family; // family<counter|gauge|histogram>*, owned by the holders below
    };
    void check_new_name(const std::string& name, metric_type type) const;

    mutable std::mutex mutex_;
    std::vector<entry> order_;
    std::vector<std::unique_ptr<family<counter>>> counters_;
    std::vector<std::unique_ptr<family<gauge>>> gauges_;
    std::vector<std::unique_ptr<family<histogram>>> histograms_;
};

} // namespace lanes::common::metrics
