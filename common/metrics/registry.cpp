#include "common/metrics/registry.hpp"

#include "common/metrics/exposition.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace lanes::common::metrics {

namespace {

bool is_name_start(char c, bool allow_colon) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (allow_colon && c == ':');
}

bool is_name_char(char c, bool allow_colon) {
    return is_name_start(c, allow_colon) || (c >= '0' && c <= '9');
}

bool valid_name(std::string_view s, bool allow_colon) {
    if (s.empty() || !is_name_start(s.front(), allow_colon))
        return false;
    return std::all_of(s.begin(), s.end(), [&](char c) { return is_name_char(c, allow_colon); });
}

void validate_buckets(const std::vector<double>& bounds) {
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        if (!std::isfinite(bounds[i]))
            throw std::invalid_argument("histogram bucket bounds must be finite");
        if (i > 0 && !(bounds[i - 1] < bounds[i]))
            throw std::invalid_argument("histogram bucket bounds must be strictly ascending");
    }
}

template <class T>
void validate_label_names(const std::string& metric, const std::vector<std::string>& names) {
    for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string& n = names[i];
        if (!valid_name(n, false) || n.starts_with("__"))
            throw std::invalid_argument("metric " + metric + ": invalid label name '" + n + "'");
        if (std::is_same_v<T, histogram> && n == "le")
            throw std::invalid_argument("metric " + metric + ": label 'le' is reserved");
        if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), n) !=
            names.begin() + static_cast<std::ptrdiff_t>(i))
            throw std::invalid_argument("metric " + metric + ": duplicate label '" + n + "'");
    }
}

void add_to(std::atomic<double>& a, double v) {
    double cur = a.load(std::memory_order_relaxed);
    while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed))
        ;
}

// Sample names a family writes, so that e.g. a gauge `x_count` cannot shadow histogram `x`.
std::vector<std::string> sample_names(const std::string& name, metric_type type) {
    if (type != metric_type::histogram)
        return {name};
    return {name, name + "_bucket", name + "_count", name + "_sum"};
}

const std::string& family_name(metric_type type, const void* f) {
    switch (type) {
    case metric_type::counter:
        return static_cast<const family<counter>*>(f)->name();
    case metric_type::gauge:
        return static_cast<const family<gauge>*>(f)->name();
    case metric_type::histogram:
        break;
    }
    return static_cast<const family<histogram>*>(f)->name();
}

} // namespace

// ---- counter, gauge, histogram ---------------------------------------------------------------

void counter::inc(double v) {
    if (!(v >= 0.0)) // also drops NaN
        return;
    add_to(value_, v);
}

void gauge::inc(double v) {
    add_to(value_, v);
}

histogram::histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds))
    , buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {
    validate_buckets(bounds_);
    for (std::size_t i = 0; i <= bounds_.size(); ++i)
        buckets_[i].store(0, std::memory_order_relaxed);
}

void histogram::observe(double v) {
    // First bound >= v (buckets are `le`); NaN and values above every bound go to +Inf.
    std::size_t i = bounds_.size();
    if (!std::isnan(v))
        i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                     bounds_.begin());
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    add_to(sum_, v);
}

std::vector<std::uint64_t> histogram::bucket_counts() const {
    std::vector<std::uint64_t> out(bounds_.size() + 1);
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = buckets_[i].load(std::memory_order_relaxed);
    return out;
}

// ---- family ----------------------------------------------------------------------------------

template <class T>
family<T>::family(std::string name, std::string help, std::vector<std::string> label_names,
                  std::vector<double> buckets)
    : name_(std::move(name))
    , help_(std::move(help))
    , label_names_(std::move(label_names))
    , buckets_(std::move(buckets)) {
    if (!valid_name(name_, true))
        throw std::invalid_argument("invalid metric name '" + name_ + "'");
    validate_label_names<T>(name_, label_names_);
    if constexpr (std::is_same_v<T, histogram>)
        validate_buckets(buckets_);
    if (label_names_.empty())
        with({}); // an unlabeled metric is exposed (as 0) from the start
}

namespace {

// FNV-1a over the values, each followed by a byte no label value can make ambiguous here.
template <class Values>
std::uint64_t values_hash(const Values& values) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (const auto& v : values) {
        for (const char c : std::string_view(v))
            h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
        h = (h ^ 0xffU) * 0x100000001b3ULL;
    }
    return h;
}

template <class A, class B>
bool same_values(const A& a, const B& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
        return std::string_view(x) == std::string_view(y);
    });
}

} // namespace

template <class T>
T& family<T>::with(const label_values& values) {
    return with_values(values);
}

template <class T>
T& family<T>::with(std::initializer_list<std::string_view> values) {
    return with_values(std::span<const std::string_view>(values.begin(), values.size()));
}

template <class T>
template <class Values>
T& family<T>::with_values(const Values& values) {
    if (values.size() != label_names_.size())
        throw std::invalid_argument("metric " + name_ + ": expected " +
                                    std::to_string(label_names_.size()) + " label values, got " +
                                    std::to_string(values.size()));
    const std::uint64_t hash = values_hash(values);
    std::lock_guard lock(mutex_);
    const auto [first, last] = index_.equal_range(hash);
    for (auto it = first; it != last; ++it)
        if (same_values(*it->second.first, values))
            return *it->second.second;
    return add_child(label_values(values.begin(), values.end()), hash);
}

// Called with the mutex held.
template <class T>
T& family<T>::add_child(label_values values, std::uint64_t hash) {
    std::unique_ptr<T> child;
    if constexpr (std::is_same_v<T, histogram>)
        child = std::make_unique<T>(buckets_);
    else
        child = std::make_unique<T>();
    const auto placed = children_.emplace(std::move(values), std::move(child)).first;
    index_.emplace(hash, std::make_pair(&placed->first, placed->second.get()));
    return *placed->second;
}

template <class T>
bool family<T>::drop_children(const std::function<bool(const label_values&)>& keep,
                              std::vector<std::unique_ptr<T>>* parked) {
    bool any = false;
    for (auto it = children_.begin(); it != children_.end();) {
        if (keep(it->first)) {
            ++it;
            continue;
        }
        const T* child = it->second.get();
        std::erase_if(index_, [child](const auto& entry) { return entry.second.second == child; });
        if (parked != nullptr)
            parked->push_back(std::move(it->second));
        it = children_.erase(it);
        any = true;
    }
    return any;
}

template <class T>
void family<T>::retain(const std::function<bool(const label_values&)>& keep) {
    std::lock_guard lock(mutex_);
    drop_children(keep, nullptr);
}

template <class T>
void family<T>::retire(const std::function<bool(const label_values&)>& keep) {
    std::lock_guard lock(mutex_);
    retired_.clear(); // dropped two calls ago: nobody can still be between with() and an update
    retired_.swap(retiring_);
    if (drop_children(keep, &retiring_))
        generation_.fetch_add(1, std::memory_order_release);
}

template class family<counter>;
template class family<gauge>;
template class family<histogram>;

// ---- registry --------------------------------------------------------------------------------

void registry::check_new_name(const std::string& name, metric_type type) const {
    if (!valid_name(name, true))
        throw std::invalid_argument("invalid metric name '" + name + "'");
    if (type == metric_type::counter && !name.ends_with("_total"))
        throw std::invalid_argument("counter name '" + name + "' must end in _total");
    const std::vector<std::string> mine = sample_names(name, type);
    for (const entry& e : order_) {
        for (const std::string& theirs : sample_names(family_name(e.type, e.family), e.type)) {
            if (std::find(mine.begin(), mine.end(), theirs) != mine.end())
                throw std::invalid_argument("metric name '" + name + "' is already registered");
        }
    }
}

family<counter>& registry::add_counter(std::string name, std::string help,
                                       std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    check_new_name(name, metric_type::counter);
    auto f =
        std::make_unique<family<counter>>(std::move(name), std::move(help), std::move(label_names));
    order_.push_back({metric_type::counter, f.get()});
    counters_.push_back(std::move(f));
    return *counters_.back();
}

family<gauge>& registry::add_gauge(std::string name, std::string help,
                                   std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    check_new_name(name, metric_type::gauge);
    auto f =
        std::make_unique<family<gauge>>(std::move(name), std::move(help), std::move(label_names));
    order_.push_back({metric_type::gauge, f.get()});
    gauges_.push_back(std::move(f));
    return *gauges_.back();
}

family<histogram>& registry::add_histogram(std::string name, std::string help,
                                           std::vector<double> buckets,
                                           std::vector<std::string> label_names) {
    std::lock_guard lock(mutex_);
    check_new_name(name, metric_type::histogram);
    auto f = std::make_unique<family<histogram>>(std::move(name), std::move(help),
                                                 std::move(label_names), std::move(buckets));
    order_.push_back({metric_type::histogram, f.get()});
    histograms_.push_back(std::move(f));
    return *histograms_.back();
}

std::string registry::expose() const {
    std::lock_guard lock(mutex_);
    std::string out;
    for (const entry& e : order_) {
        switch (e.type) {
        case metric_type::counter:
            write_family(out, *static_cast<const family<counter>*>(e.family));
            break;
        case metric_type::gauge:
            write_family(out, *static_cast<const family<gauge>*>(e.family));
            break;
        case metric_type::histogram:
            write_family(out, *static_cast<const family<histogram>*>(e.family));
            break;
        }
    }
    return out;
}

} // namespace lanes::common::metrics
