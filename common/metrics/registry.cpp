#include "common/metrics/registry.hpp"

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

// Label pairs of one sample, sorted by label name; `extra` (e.g. le) is merged in.
struct label_writer {
    const std::vector<std::string>& names;
    std::vector<std::size_t> order; // indices into names, sorted by name

    explicit label_writer(const std::vector<std::string>& label_names)
        : names(label_names) {
        order.resize(names.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return names[a] < names[b]; });
    }

    void write(std::string& out, const label_values& values, std::string_view extra_name = {},
               std::string_view extra_value = {}) const {
        if (order.empty() && extra_name.empty())
            return;
        out += '{';
        bool first = true;
        bool extra_done = extra_name.empty();
        auto put = [&](std::string_view n, std::string_view v) {
            if (!first)
                out += ',';
            first = false;
            out.append(n).append("=\"").append(escape_label_value(v)).append("\"");
        };
        for (std::size_t i : order) {
            if (!extra_done && extra_name < names[i]) {
                put(extra_name, extra_value);
                extra_done = true;
            }
            put(names[i], values[i]);
        }
        if (!extra_done)
            put(extra_name, extra_value);
        out += '}';
    }
};

void write_header(std::string& out, const std::string& name, const std::string& help,
                  std::string_view type) {
    out.append("# HELP ").append(name).append(" ").append(escape_help(help)).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

template <class T>
void write_simple(std::string& out, const family<T>& f, std::string_view type) {
    write_header(out, f.name(), f.help(), type);
    const label_writer labels(f.label_names());
    f.for_each([&](const label_values& values, const T& child) {
        out.append(f.name());
        labels.write(out, values);
        out.append(" ").append(format_value(child.value())).append("\n");
    });
}

void write_histogram(std::string& out, const family<histogram>& f) {
    write_header(out, f.name(), f.help(), "histogram");
    const label_writer labels(f.label_names());
    f.for_each([&](const label_values& values, const histogram& h) {
        const std::vector<std::uint64_t> counts = h.bucket_counts();
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < counts.size(); ++i) {
            cumulative += counts[i];
            const bool inf = i == h.upper_bounds().size();
            const std::string le = inf ? "+Inf" : format_value(h.upper_bounds()[i]);
            out.append(f.name()).append("_bucket");
            labels.write(out, values, "le", le);
            out.append(" ").append(format_value(static_cast<double>(cumulative))).append("\n");
        }
        // _count is the +Inf bucket, so the two always agree even while observations race.
        out.append(f.name()).append("_count");
        labels.write(out, values);
        out.append(" ").append(format_value(static_cast<double>(cumulative))).append("\n");
        out.append(f.name()).append("_sum");
        labels.write(out, values);
        out.append(" ").append(format_value(h.sum())).append("\n");
    });
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
void family<T>::retain(const std::function<bool(const label_values&)>& keep) {
    std::lock_guard lock(mutex_);
    for (auto it = children_.begin(); it != children_.end();) {
        if (keep(it->first)) {
            ++it;
            continue;
        }
        const T* child = it->second.get();
        std::erase_if(index_, [child](const auto& entry) { return entry.second.second == child; });
        it = children_.erase(it);
    }
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
            write_simple(out, *static_cast<const family<counter>*>(e.family), "counter");
            break;
        case metric_type::gauge:
            write_simple(out, *static_cast<const family<gauge>*>(e.family), "gauge");
            break;
        case metric_type::histogram:
            write_histogram(out, *static_cast<const family<histogram>*>(e.family));
            break;
        }
    }
    return out;
}

// ---- formatting ------------------------------------------------------------------------------

std::string format_value(double v) {
    if (std::isnan(v))
        return "NaN";
    if (std::isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    // Shortest round-trip digits in scientific form, e.g. "5.2311e+04", "1e+00", "-2.5e-05".
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
    std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));
    const std::size_t e_pos = sci.find('e');
    int exp = 0;
    std::string_view exp_text = sci.substr(e_pos + 1);
    if (exp_text.front() == '+')
        exp_text.remove_prefix(1);
    std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp);
    // Go switches to exponent form from 1e+06 up and below 1e-04.
    if (exp < -4 || exp >= 6)
        return std::string(sci);

    std::string out;
    std::string_view mantissa = sci.substr(0, e_pos);
    if (mantissa.front() == '-') {
        out += '-';
        mantissa.remove_prefix(1);
    }
    std::string digits;
    for (char c : mantissa)
        if (c != '.')
            digits += c;
    if (exp < 0)
        return out + "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    const auto int_len = static_cast<std::size_t>(exp) + 1;
    if (digits.size() <= int_len)
        return out + digits + std::string(int_len - digits.size(), '0') + ".0";
    return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::string escape_label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string escape_help(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

} // namespace lanes::common::metrics
