#include "base/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace tw::crc32c {
namespace {

// Known answers from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32c, KnownAnswers) {
  EXPECT_EQ(Value(std::string(32, '\0')), 0x8a9136aau);
  EXPECT_EQ(Value(std::string(32, '\xff')), 0x62a8ab43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending += static_cast<char>(i);
    descending += static_cast<char>(31 - i);
  }
  EXPECT_EQ(Value(ascending), 0x46dd794eu);
  EXPECT_EQ(Value(descending), 0x113fdb5cu);
  EXPECT_EQ(Value("123456789"), 0xe3069283u);
}

TEST(Crc32c, HardwareAndPortableAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::string data(4096 + 16, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  for (size_t align = 0; align < 8; ++align) {
    for (size_t n : {0, 1, 7, 8, 9, 15, 16, 63, 64, 65, 1000, 4096}) {
      ASSERT_EQ(Value(data.data() + align, n), ExtendPortable(0, data.data() + align, n))
          << "align " << align << " n " << n;
    }
  }
}

TEST(Crc32c, ExtendEqualsWhole) {
  const std::string s = "hello, training run";
  EXPECT_EQ(Extend(Value(s.data(), 5), s.data() + 5, s.size() - 5), Value(s));
}

TEST(Crc32c, MaskRoundTripsAndDiffers) {
  for (uint32_t c : {0u, 1u, 0x8a9136aau, 0xffffffffu}) {
    EXPECT_EQ(Unmask(Mask(c)), c);
    EXPECT_NE(Mask(c), c);
  }
}

}  // namespace
}  // namespace tw::crc32c
