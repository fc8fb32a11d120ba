// Writes a piece-by-piece text of bounded size, such as an HTTP head, into one buffer: the
// caller gives an upper bound once, then each piece is a memcpy (of a constant length for a
// literal, which the compiler inlines) rather than a std::string::append with its capacity check
// and call. The router writes two heads per proxied request this way.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lanes::common {

class head_writer {
public:
    // Room a number takes at most.
    static constexpr std::size_t number_bound = 20;

    // Writes into `buffer` from its start, first growing it to `bound` bytes if it is smaller; a
    // buffer reused across requests keeps its size, so it allocates once.
    head_writer(std::string& buffer, std::size_t bound) {
        if (buffer.size() < bound)
            buffer.resize(bound);
        begin_ = p_ = buffer.data();
        end_ = begin_ + buffer.size();
    }

    head_writer& put(std::string_view s) {
        check(s.size());
        std::memcpy(p_, s.data(), s.size());
        p_ += s.size();
        return *this;
    }
    template <std::size_t N>
    head_writer& put(const char (&literal)[N]) {
        check(N - 1);
        std::memcpy(p_, literal, N - 1);
        p_ += N - 1;
        return *this;
    }
    head_writer& put_number(std::uint64_t n) {
        check(number_bound);
        p_ = std::to_chars(p_, p_ + number_bound, n).ptr;
        return *this;
    }

    std::string_view text() const { return {begin_, static_cast<std::size_t>(p_ - begin_)}; }

private:
    // A bound too small is the caller's bug; it must not become a write past the buffer.
    void check(std::size_t n) const {
        if (static_cast<std::size_t>(end_ - p_) < n)
            throw std::length_error("head_writer: bound too small");
    }

    char* begin_;
    char* p_;
    char* end_;
};

} // namespace lanes::common
