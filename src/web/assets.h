// The web view's static files: the page shell, our CSS and JS (src/web/assets/) and the
// vendored uPlot (third_party/uplot), embedded into the binary at build time. Pure lookups of
// immutable data, any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tw::web {

struct EmbeddedAsset {  // generated (cmake/embed_sql.cmake)
  const char* name;
  const char* text;
};
const std::vector<EmbeddedAsset>& EmbeddedAssets();

struct StaticFile {
  std::string_view body;
  std::string_view content_type;
  std::string etag;  // a quoted hash of the body, for If-None-Match
  bool page = false;  // the HTML shell (gets the Content-Security-Policy)
};

// `/assets/NAME` is that asset; a page path (`/`, `/runs/ID`, `/findings`, `/findings/ID`,
// `/deliveries`, `/compare`) is the page shell, whose script reads the path. Null otherwise.
const StaticFile* FindStatic(const std::string& path);

}  // namespace tw::web
