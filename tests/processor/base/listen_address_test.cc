#include "processor/base/listen_address.h"

#include <gtest/gtest.h>

#include <string>

namespace oncecount::base {
namespace {

TEST(ListenAddress, ReadsLocalhostIpv4AndBracketedIpv6WithAPort) {
  struct Case {
    const char* text;
    const char* ip;
    uint16_t port;
  };
  for (const Case& c :
       {Case{"localhost:0", "127.0.0.1", 0}, Case{"127.0.0.1:8080", "127.0.0.1", 8080},
        Case{"0.0.0.0:65535", "0.0.0.0", 65535}, Case{"[::1]:0", "::1", 0},
        Case{"[::]:8080", "::", 8080}}) {
    const Result<ListenAddress> parsed = ParseListenAddress(c.text);
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.error();
    EXPECT_EQ(parsed->ip, c.ip) << c.text;
    EXPECT_EQ(parsed->port, c.port) << c.text;
  }
}

// Regression: the configuration accepted any host (my-host:8080 passed check-config,
// then serve could not bind it), and the server read the port with stoul, which
// stops at the first non-digit (127.0.0.1:80abc listened on port 80).
TEST(ListenAddress, RefusesNamesPortsWithTrailingBytesAndUnbracketedIpv6) {
  for (const char* text :
       {"my-host:8080", "127.0.0.1:80abc", "127.0.0.1:", ":80", "127.0.0.1:-1", "127.0.0.1:65536",
        "127.0.0.1: 80", "127.0.0.1:+80", "::1:80", "[127.0.0.1]:80", "[localhost]:80", "localhost",
        "", "[::1]", "256.0.0.1:80", "127.0.0.1:99999999999999999999"}) {
    const Result<ListenAddress> parsed = ParseListenAddress(text);
    EXPECT_FALSE(parsed.ok()) << "accepted \"" << text << "\"";
    if (!parsed.ok()) {
      EXPECT_NE(parsed.message().find(std::string("\"") + text + "\""), std::string::npos)
          << parsed.message();
    }
  }
}

}  // namespace
}  // namespace oncecount::base
