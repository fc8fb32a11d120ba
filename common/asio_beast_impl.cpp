// Asio and Beast are built in separate-compilation mode: their out-of-line implementation is
// compiled once, here, instead of in every translation unit that includes them.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
