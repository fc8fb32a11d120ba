// MessagePack, the subset KV events use (nil, booleans, integers, floats, strings, binary, arrays,
// maps; extension types are refused), written to and read from bytes. Ours rather than
// msgpack-cxx, whose Debian package pulls an older Boost that conflicts with the one lanes builds
// with. The reader treats its input as hostile: every length is checked against the bytes left
// before anything is allocated, nesting and the number of values are bounded, and it never reads
// past the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::common::msgpack {

// Appends values to `out`.
class writer {
public:
    explicit writer(std::string& out)
        : out_(out) {}
    void nil();
    void boolean(bool v);
    void uint(std::uint64_t v);
    void sint(std::int64_t v); // as uint when >= 0
    void float64(double v);
    void str(std::string_view v);
    void bin(std::string_view v);
    void array(std::size_t n); // then n values
    void map(std::size_t n);   // then n key, value pairs

private:
    void byte(std::uint8_t b) { out_.push_back(static_cast<char>(b)); }
    void big_endian(std::uint64_t v, int bytes);
    std::string& out_;
};

enum class kind : std::uint8_t { nil, boolean, uint, sint, float64, str, bin, array, map };

// One value of a parsed document; its children (an array's items, a map's keys and values in
// turn) are contiguous in the document.
struct value {
    kind k = kind::nil;
    bool b = false;
    std::uint64_t u = 0; // uint
    std::int64_t i = 0;  // sint (negative only: non-negative integers are uint)
    double f = 0;
    std::string_view s;                 // str, bin: into the input bytes
    std::uint32_t first = 0, count = 0; // array: count items; map: count pairs
};

struct limits {
    std::size_t max_depth = 16;
    std::size_t max_values = 1 << 22;
};

class document {
public:
    // Parses all of `bytes` (which must outlive the document) as one value; false with `error`
    // set when it is not exactly one well-formed value within `lim`.
    bool parse(std::string_view bytes, const limits& lim, std::string& error);
    const value& root() const { return values_.front(); }
    // An array's item or a map's pair, by position.
    const value& item(const value& array, std::size_t i) const { return values_[array.first + i]; }
    const value& key(const value& map, std::size_t i) const { return values_[map.first + 2 * i]; }
    const value& val(const value& map, std::size_t i) const {
        return values_[map.first + 2 * i + 1];
    }
    // A map's value under the string key `name`, or nullptr.
    const value* find(const value& map, std::string_view name) const;

private:
    bool read(std::size_t slot, std::size_t depth);
    bool need(std::size_t n);
    std::uint64_t take(int bytes);

    std::string_view in_;
    std::size_t at_ = 0;
    limits lim_;
    std::string error_;
    std::vector<value> values_;
};

} // namespace lanes::common::msgpack
