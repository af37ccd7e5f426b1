#include "ein/Syntax/Pattern.h"
#include <gtest/gtest.h>
TEST(Smoke, Parse) { EXPECT_TRUE(bool(ein::parsePattern("a -> a", ein::PatternUse::Rearrange))); }
