// A GoogleTest fixture base that shares one headless Chromium (support/browser.h) among the
// tests of a suite: Chromium's start costs about a second. Chromium missing or failing to start
// fails every test of the suite with the reason (install it with tools/install-deps.sh); it is
// never a silent skip.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <iostream>
#include <memory>
#include <string>

#include "support/browser.h"

namespace tw::testing {

class BrowserSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      browser_ = std::make_unique<Browser>();
    } catch (const BrowserError& e) {
      start_error_ = e.what();
    }
  }
  static void TearDownTestSuite() { browser_.reset(); }

  // Each test starts on a blank page with no errors recorded.
  void SetUp() override {
    if (!browser_) GTEST_FAIL() << "Chromium did not start: " << start_error_;
    browser_->Navigate("about:blank");
    browser_->ClearErrors();
  }
  // A failed test shows what the page reported and what Chromium said.
  void TearDown() override {
    if (browser_ && HasFailure())
      std::cerr << "page errors: " << browser_->ErrorReport() << "\n";
  }

  static Browser& browser() { return *browser_; }

  static inline std::unique_ptr<Browser> browser_;
  static inline std::string start_error_;
};

// `html` as a data: URL (percent-encoded, so '#' and '%' survive).
inline std::string DataUrl(const std::string& html) {
  static const char* kHex = "0123456789ABCDEF";
  std::string url = "data:text/html;charset=utf-8,";
  for (unsigned char c : html) {
    if (std::isalnum(c) || c == '<' || c == '>' || c == '/' || c == '=' || c == '(' || c == ')' ||
        c == ';' || c == '.' || c == ',' || c == '-' || c == '_' || c == ':')
      url += static_cast<char>(c);
    else
      url += {'%', kHex[c >> 4], kHex[c & 15]};
  }
  return url;
}

}  // namespace tw::testing
