#include "common/kv_events/msgpack.hpp"

#include <bit>
#include <cstring>

namespace lanes::common::msgpack {

void writer::big_endian(std::uint64_t v, int bytes) {
    for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8)
        byte(static_cast<std::uint8_t>(v >> shift));
}

void writer::nil() {
    byte(0xc0);
}

void writer::boolean(bool v) {
    byte(v ? 0xc3 : 0xc2);
}

void writer::uint(std::uint64_t v) {
    if (v < 0x80) {
        byte(static_cast<std::uint8_t>(v));
    } else if (v <= 0xff) {
        byte(0xcc);
        big_endian(v, 1);
    } else if (v <= 0xffff) {
        byte(0xcd);
        big_endian(v, 2);
    } else if (v <= 0xffffffff) {
        byte(0xce);
        big_endian(v, 4);
    } else {
        byte(0xcf);
        big_endian(v, 8);
    }
}

void writer::sint(std::int64_t v) {
    if (v >= 0) {
        uint(static_cast<std::uint64_t>(v));
    } else if (v >= -32) {
        byte(static_cast<std::uint8_t>(v));
    } else if (v >= INT8_MIN) {
        byte(0xd0);
        big_endian(static_cast<std::uint64_t>(v), 1);
    } else if (v >= INT16_MIN) {
        byte(0xd1);
        big_endian(static_cast<std::uint64_t>(v), 2);
    } else if (v >= INT32_MIN) {
        byte(0xd2);
        big_endian(static_cast<std::uint64_t>(v), 4);
    } else {
        byte(0xd3);
        big_endian(static_cast<std::uint64_t>(v), 8);
    }
}

void writer::float64(double v) {
    byte(0xcb);
    big_endian(std::bit_cast<std::uint64_t>(v), 8);
}

void writer::str(std::string_view v) {
    const std::size_t n = v.size();
    if (n < 32) {
        byte(static_cast<std::uint8_t>(0xa0 | n));
    } else if (n <= 0xff) {
        byte(0xd9);
        big_endian(n, 1);
    } else if (n <= 0xffff) {
        byte(0xda);
        big_endian(n, 2);
    } else {
        byte(0xdb);
        big_endian(n, 4);
    }
    out_.append(v);
}

void writer::bin(std::string_view v) {
    const std::size_t n = v.size();
    if (n <= 0xff) {
        byte(0xc4);
        big_endian(n, 1);
    } else if (n <= 0xffff) {
        byte(0xc5);
        big_endian(n, 2);
    } else {
        byte(0xc6);
        big_endian(n, 4);
    }
    out_.append(v);
}

void writer::array(std::size_t n) {
    if (n < 16) {
        byte(static_cast<std::uint8_t>(0x90 | n));
    } else if (n <= 0xffff) {
        byte(0xdc);
        big_endian(n, 2);
    } else {
        byte(0xdd);
        big_endian(n, 4);
    }
}

void writer::map(std::size_t n) {
    if (n < 16) {
        byte(static_cast<std::uint8_t>(0x80 | n));
    } else if (n <= 0xffff) {
        byte(0xde);
        big_endian(n, 2);
    } else {
        byte(0xdf);
        big_endian(n, 4);
    }
}

bool document::parse(std::string_view bytes, const limits& lim, std::string& error) {
    in_ = bytes;
    at_ = 0;
    lim_ = lim;
    error_.clear();
    values_.clear();
    values_.resize(1);
    const bool ok = read(0, 0) && (at_ == in_.size() || (error_ = "bytes after the value", false));
    error = error_;
    return ok;
}

bool document::need(std::size_t n) {
    if (in_.size() - at_ >= n)
        return true;
    error_ = "truncated at byte " + std::to_string(at_);
    return false;
}

std::uint64_t document::take(int bytes) {
    std::uint64_t v = 0;
    for (int k = 0; k < bytes; ++k)
        v = (v << 8) | static_cast<std::uint8_t>(in_[at_++]);
    return v;
}

bool document::read(std::size_t slot, std::size_t depth) {
    if (depth > lim_.max_depth) {
        error_ = "nested deeper than " + std::to_string(lim_.max_depth);
        return false;
    }
    if (!need(1))
        return false;
    const auto tag = static_cast<std::uint8_t>(in_[at_++]);
    value v;
    std::uint64_t length = 0;
    int length_bytes = 0;
    enum { none, string, binary, arr, mp } body = none;
    if (tag <= 0x7f) {
        v.k = kind::uint;
        v.u = tag;
    } else if (tag >= 0xe0) {
        v.k = kind::sint;
        v.i = static_cast<std::int8_t>(tag);
    } else if ((tag & 0xf0) == 0x80) {
        body = mp;
        length = tag & 0x0f;
    } else if ((tag & 0xf0) == 0x90) {
        body = arr;
        length = tag & 0x0f;
    } else if ((tag & 0xe0) == 0xa0) {
        body = string;
        length = tag & 0x1f;
    } else {
        switch (tag) {
        case 0xc0:
            v.k = kind::nil;
            break;
        case 0xc2:
            v.k = kind::boolean;
            v.b = false;
            break;
        case 0xc3:
            v.k = kind::boolean;
            v.b = true;
            break;
        case 0xc4:
            body = binary;
            length_bytes = 1;
            break;
        case 0xc5:
            body = binary;
            length_bytes = 2;
            break;
        case 0xc6:
            body = binary;
            length_bytes = 4;
            break;
        case 0xca:
            if (!need(4))
                return false;
            v.k = kind::float64;
            v.f = std::bit_cast<float>(static_cast<std::uint32_t>(take(4)));
            break;
        case 0xcb:
            if (!need(8))
                return false;
            v.k = kind::float64;
            v.f = std::bit_cast<double>(take(8));
            break;
        case 0xcc:
        case 0xcd:
        case 0xce:
        case 0xcf: {
            const int n = 1 << (tag - 0xcc);
            if (!need(static_cast<std::size_t>(n)))
                return false;
            v.k = kind::uint;
            v.u = take(n);
            break;
        }
        case 0xd0:
        case 0xd1:
        case 0xd2:
        case 0xd3: {
            const int n = 1 << (tag - 0xd0);
            if (!need(static_cast<std::size_t>(n)))
                return false;
            const std::uint64_t raw = take(n);
            const int shift = 64 - 8 * n; // sign-extend
            const auto s = static_cast<std::int64_t>(raw << shift) >> shift;
            if (s >= 0) {
                v.k = kind::uint;
                v.u = static_cast<std::uint64_t>(s);
            } else {
                v.k = kind::sint;
                v.i = s;
            }
            break;
        }
        case 0xd9:
            body = string;
            length_bytes = 1;
            break;
        case 0xda:
            body = string;
            length_bytes = 2;
            break;
        case 0xdb:
            body = string;
            length_bytes = 4;
            break;
        case 0xdc:
            body = arr;
            length_bytes = 2;
            break;
        case 0xdd:
            body = arr;
            length_bytes = 4;
            break;
        case 0xde:
            body = mp;
            length_bytes = 2;
            break;
        case 0xdf:
            body = mp;
            length_bytes = 4;
            break;
        default:
            error_ = "unsupported type byte " + std::to_string(tag) + " at byte " +
                     std::to_string(at_ - 1);
            return false;
        }
    }
    if (length_bytes > 0) {
        if (!need(static_cast<std::size_t>(length_bytes)))
            return false;
        length = take(length_bytes);
    }
    if (body == string || body == binary) {
        if (!need(length))
            return false;
        v.k = body == string ? kind::str : kind::bin;
        v.s = in_.substr(at_, length);
        at_ += length;
    } else if (body == arr || body == mp) {
        const std::uint64_t children = body == mp ? 2 * length : length;
        // Every value takes at least a byte: a count past the bytes left is a lie.
        if (!need(children))
            return false;
        if (values_.size() + children > lim_.max_values) {
            error_ = "more than " + std::to_string(lim_.max_values) + " values";
            return false;
        }
        v.k = body == mp ? kind::map : kind::array;
        v.count = static_cast<std::uint32_t>(length);
        v.first = static_cast<std::uint32_t>(values_.size());
        values_.resize(values_.size() + children);
        values_[slot] = v;
        for (std::uint64_t c = 0; c < children; ++c)
            if (!read(v.first + c, depth + 1))
                return false;
        return true;
    }
    values_[slot] = v;
    return true;
}

const value* document::find(const value& map, std::string_view name) const {
    if (map.k != kind::map)
        return nullptr;
    for (std::size_t i = 0; i < map.count; ++i) {
        const value& k = key(map, i);
        if (k.k == kind::str && k.s == name)
            return &val(map, i);
    }
    return nullptr;
}

} // namespace lanes::common::msgpack
